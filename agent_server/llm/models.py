"""The model registry: context windows, output limits, prices and cache rules, as data.

Every number about a model lives here and nowhere else. Prices are US dollars per million
tokens at list price. Users add models (a local Ollama, vLLM or llama.cpp server, a proxy's
alias) in a models file, JSON or YAML, read by `load_models_file`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeAlias, get_args

import yaml

from agent_server.errors import UnknownModelError

Vendor: TypeAlias = Literal["anthropic", "openai", "sim", "local"]
VENDORS: tuple[str, ...] = get_args(Vendor)
# A models or config file with one of these suffixes is YAML; any other, JSON.
YAML_SUFFIXES = (".yaml", ".yml")
# How an Anthropic model is asked to think: "budget", `thinking: {type: "enabled",
# budget_tokens}` (Haiku 4.5, Opus 4.5 and older; the simulator); "adaptive", `thinking:
# {type: "adaptive"}` with `output_config.effort` (Sonnet 4.6, Opus 4.6 and later, which
# refuse or deprecate budgets). OpenAI models think when `reasoning` says so.
ThinkingStyle: TypeAlias = Literal["budget", "adaptive"]
THINKING_STYLES: tuple[str, ...] = get_args(ThinkingStyle)


@dataclass(frozen=True, slots=True)
class Pricing:
    """US dollars per million tokens.

    `cache_write_5m` is the price of a cache write with the short retention, `cache_write_1h`
    with the long one: Anthropic's 5-minute and 1-hour writes; for OpenAI models that bill
    writes, the 30-minute and the extended (12h/24h) write. `cache_read` is the price of
    cached input. Some models bill a whole request at higher rates once its prompt (input +
    cache reads + cache writes) passes `long_prompt_threshold` tokens: `long_prompt` holds
    those rates.
    """

    input: float = 0.0
    output: float = 0.0
    cache_write_5m: float = 0.0
    cache_write_1h: float = 0.0
    cache_read: float = 0.0
    long_prompt_threshold: int = 0
    long_prompt: Pricing | None = None

    def for_prompt(self, prompt_tokens: int) -> Pricing:
        """The rates that apply to a request whose prompt has `prompt_tokens` tokens."""
        if self.long_prompt is not None and prompt_tokens > self.long_prompt_threshold > 0:
            return self.long_prompt
        return self


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
    # OpenAI from GPT-5.6 on: cache writes are billed (reported as `cache_write_tokens`), and
    # the cache is set with `prompt_cache_options` (`prompt_cache_retention` is for the
    # models before; the API refuses the two together).
    bills_cache_writes: bool = False
    thinking: ThinkingStyle | None = None  # Anthropic's API: how to turn thinking on


def speaks_openai_extensions(model: ModelInfo) -> bool:
    """Whether the server behind `model` knows OpenAI's own fields (prompt_cache_key, ...).

    OpenAI and the built-in simulator do; a user-defined local model's server may reject
    or ignore them, so none are sent to it.
    """
    return model.vendor in ("openai", "sim")


def _anthropic_pricing(
    input_price: float,
    output_price: float,
    read_ratio: float = 0.1,
    *,
    long_prompt_threshold: int = 0,
    long_prompt_factor: float = 1.0,
) -> Pricing:
    """Anthropic's multipliers: 5m write 1.25x, 1h write 2x, read 0.1x of input (some newer
    models read at 0.05x or 0.025x). A long-prompt tier scales every rate by one factor."""
    base = Pricing(
        input=input_price,
        output=output_price,
        cache_write_5m=input_price * 1.25,
        cache_write_1h=input_price * 2.0,
        cache_read=input_price * read_ratio,
    )
    if not long_prompt_threshold:
        return base
    f = long_prompt_factor
    return replace(
        base,
        long_prompt_threshold=long_prompt_threshold,
        long_prompt=Pricing(
            input=base.input * f,
            output=base.output * f,
            cache_write_5m=base.cache_write_5m * f,
            cache_write_1h=base.cache_write_1h * f,
            cache_read=base.cache_read * f,
        ),
    )


def _openai_pricing(
    input_price: float,
    output_price: float,
    cached: float,
    *,
    cache_write: float = 0.0,
    cache_write_extended: float = 0.0,
    long_prompt_threshold: int = 0,
) -> Pricing:
    """OpenAI: cached input at its own rate; cache writes billed only on models from GPT-5.6
    on (30-minute write, and the extended one). Above `long_prompt_threshold` input tokens
    input and cache rates double and output costs 1.5x, for the whole request."""
    base = Pricing(
        input=input_price,
        output=output_price,
        cache_write_5m=cache_write,
        cache_write_1h=cache_write_extended,
        cache_read=cached,
    )
    if not long_prompt_threshold:
        return base
    return replace(
        base,
        long_prompt_threshold=long_prompt_threshold,
        long_prompt=Pricing(
            input=input_price * 2,
            output=output_price * 1.5,
            cache_write_5m=cache_write * 2,
            cache_write_1h=cache_write_extended * 2,
            cache_read=cached * 2,
        ),
    )


# Sonnet-class list prices for the simulator, so that demo and benchmark bills read like
# real ones.
_SIM_PRICING = _anthropic_pricing(3.0, 15.0)

# List prices, US dollars per million tokens, checked on 2026-12-02 against
#   platform.claude.com/docs/en/about-claude/pricing and the per-model overview pages
#   (platform.claude.com/docs/en/models/<model>/overview), and
#   developers.openai.com/api/docs/pricing and developers.openai.com/api/docs/models/<model>.
# Notes from those pages: Sonnet 5.5 cache reads were cut from $0.20 to $0.10 on 2026-10-07;
# Haiku 5.5 bills prompts above 100k tokens at 5x; OpenAI bills requests above 272k input
# tokens at 2x input / 1.5x output. Minimum cacheable lengths come from the prompt-caching
# guide (512 Opus 5, 1024 Sonnet 5 / Opus 4.8 / Sonnet 4.6, 4096 Opus 4.5 / Haiku 4.5); the
# guide we found does not list the 5.5 models yet, so theirs are taken from their
# predecessors (Opus 5 -> Opus 5.5, Sonnet 5 -> Sonnet 5.5 and Haiku 5.5).
# Thinking styles from platform.claude.com/docs/en/build-with-claude/adaptive-thinking and
# .../extended-thinking: adaptive thinking on Sonnet 4.6, Opus 4.6 and later (budgets are
# refused from Opus 4.7 on, deprecated before); budgets on Opus 4.5 and Haiku 4.5.
BUILTIN_MODELS: tuple[ModelInfo, ...] = (
    # Anthropic: current models.
    ModelInfo("claude-opus-5-5", "Claude Opus 5.5", "anthropic", 1_000_000, 128_000,
              _anthropic_pricing(4.0, 20.0, 0.05), 512, reasoning=True, thinking="adaptive"),
    ModelInfo("claude-sonnet-5-5", "Claude Sonnet 5.5", "anthropic", 1_000_000, 128_000,
              _anthropic_pricing(2.0, 10.0, 0.05), 1024, reasoning=True, thinking="adaptive"),
    ModelInfo("claude-haiku-5-5", "Claude Haiku 5.5", "anthropic", 1_000_000, 128_000,
              _anthropic_pricing(0.10, 0.50, long_prompt_threshold=100_000,
                                 long_prompt_factor=5.0), 1024, reasoning=True,
              thinking="adaptive"),
    # Anthropic: earlier models still served.
    ModelInfo("claude-opus-5", "Claude Opus 5", "anthropic", 1_000_000, 128_000,
              _anthropic_pricing(5.0, 25.0), 512, reasoning=True, thinking="adaptive"),
    ModelInfo("claude-sonnet-5", "Claude Sonnet 5", "anthropic", 1_000_000, 128_000,
              _anthropic_pricing(2.0, 10.0), 1024, reasoning=True, thinking="adaptive"),
    ModelInfo("claude-opus-4-8", "Claude Opus 4.8", "anthropic", 1_000_000, 128_000,
              _anthropic_pricing(5.0, 25.0), 1024, reasoning=True, thinking="adaptive"),
    ModelInfo("claude-sonnet-4-6", "Claude Sonnet 4.6", "anthropic", 1_000_000, 64_000,
              _anthropic_pricing(3.0, 15.0), 1024, reasoning=True, thinking="adaptive"),
    ModelInfo("claude-opus-4-5", "Claude Opus 4.5", "anthropic", 200_000, 64_000,
              _anthropic_pricing(5.0, 25.0), 4096, reasoning=True, thinking="budget"),
    # The 200k-window Claude model the benchmark bills at list price.
    ModelInfo("claude-haiku-4-5", "Claude Haiku 4.5", "anthropic", 200_000, 64_000,
              _anthropic_pricing(1.0, 5.0), 4096, reasoning=True, thinking="budget"),
    # OpenAI. GPT-5.6 and later bill cache writes (30 minutes; 12 hours at 2x).
    ModelInfo("gpt-6.2-sol", "GPT-6.2 Sol", "openai", 1_050_000, 128_000,
              _openai_pricing(2.0, 10.0, 0.10, cache_write=2.50, cache_write_extended=5.0,
                              long_prompt_threshold=272_000), 1024, reasoning=True,
              bills_cache_writes=True),
    ModelInfo("gpt-5.5", "GPT-5.5", "openai", 1_050_000, 128_000,
              _openai_pricing(5.0, 30.0, 0.50, long_prompt_threshold=272_000), 1024,
              reasoning=True),
    ModelInfo("gpt-5.4", "GPT-5.4", "openai", 1_050_000, 128_000,
              _openai_pricing(2.50, 15.0, 0.25, long_prompt_threshold=272_000), 1024,
              reasoning=True),
    ModelInfo("gpt-5.4-mini", "GPT-5.4 mini", "openai", 400_000, 128_000,
              _openai_pricing(0.75, 4.50, 0.075), 1024, reasoning=True),
    ModelInfo("gpt-5.1", "GPT-5.1 (deprecated, shuts down 2027-04-01)", "openai", 400_000,
              128_000, _openai_pricing(1.25, 10.0, 0.125), 1024, reasoning=True),
    ModelInfo("gpt-4.1", "GPT-4.1", "openai", 1_047_576, 32_768,
              _openai_pricing(2.0, 8.0, 0.5), 1024),
    # The built-in simulator (agent_server/sim). sim-small fills quickly so that compaction
    # shows in tests and demos, while the default reserve (8k) and kept tail (8k) still fit.
    # It speaks Anthropic's API and thinks on a budget when asked to.
    ModelInfo("sim-small", "Simulator, 32k window", "sim", 32_768, 4_096, _SIM_PRICING, 1024,
              thinking="budget"),
    ModelInfo("sim-large", "Simulator, 200k window", "sim", 200_000, 16_384, _SIM_PRICING, 1024,
              thinking="budget"),
)

# The pair the benchmark bills "at list prices for one Claude and one GPT model".
BENCHMARK_CLAUDE_MODEL = "claude-haiku-4-5"
BENCHMARK_GPT_MODEL = "gpt-5.5"

class ModelRegistry:
    """The built-in models plus the user's, looked up by id."""

    def __init__(self, models: Iterable[ModelInfo] = BUILTIN_MODELS) -> None:
        self._models: dict[str, ModelInfo] = {}
        for model in models:
            self.add(model)

    def add(self, model: ModelInfo) -> None:
        """Adds `model`; a model with the same id is replaced (a models file may override)."""
        self._models[model.id] = model

    def get(self, model_id: str) -> ModelInfo | None:
        return self._models.get(model_id)

    def require(self, model_id: str) -> ModelInfo:
        """The model with this id; UnknownModelError, listing what exists, when there is none."""
        model = self._models.get(model_id)
        if model is None:
            known = ", ".join(sorted(self._models))
            raise UnknownModelError(
                f"Unknown model {model_id!r}. Known models: {known}. To use another model "
                f"(a local Ollama, vLLM or llama.cpp server), define it in a models file."
            )
        return model

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._models

    def __iter__(self) -> Iterator[ModelInfo]:
        return iter(self._models.values())

    def __len__(self) -> int:
        return len(self._models)

    def ids(self) -> list[str]:
        return list(self._models)


_PRICE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "cacheWrite5m", "cacheWrite1h")


def model_from_json(data: Mapping[str, Any]) -> ModelInfo:
    """A user-defined model; raises ValueError naming the field that is wrong.

    Keys (camelCase): `id`, `contextWindow`, `maxOutput` (required); `name`, `vendor`
    (`local` by default), `baseUrl`, `pricing` ({input, output, cacheRead, cacheWrite5m,
    cacheWrite1h} in dollars per million tokens; `cacheWrite` is an alias of
    `cacheWrite5m`), `minCacheTokens`, `reasoning`, `images`, `billsCacheWrites` (an OpenAI
    model from GPT-5.6 on: it takes `prompt_cache_options` and bills cache writes),
    `thinking` (`budget` or `adaptive`: how an Anthropic-API model is asked to think).
    """
    if not isinstance(data, Mapping):
        raise ValueError("a model definition must be an object")
    for key in ("id", "contextWindow", "maxOutput"):
        if key not in data:
            raise ValueError(f"model definition is missing {key!r}")
    model_id = data["id"]
    if not isinstance(model_id, str) or not model_id.strip():
        raise ValueError("'id' must be a non-empty string")
    where = f"model {model_id!r}"
    prices = data.get("pricing") or {}
    if not isinstance(prices, Mapping):
        raise ValueError(f"{where}: pricing must be an object of prices per million tokens")
    for key in prices:
        if key not in _PRICE_KEYS:
            raise ValueError(
                f"{where}: unknown pricing key {key!r} (expected one of {', '.join(_PRICE_KEYS)})"
            )
    vendor = data.get("vendor", "local")
    if vendor not in VENDORS:
        raise ValueError(f"{where}: vendor must be anthropic, openai, sim or local, not {vendor!r}")
    context_window = _positive_int(data, "contextWindow", where)
    max_output = _positive_int(data, "maxOutput", where)
    if max_output > context_window:
        raise ValueError(
            f"{where}: maxOutput ({max_output}) exceeds contextWindow ({context_window})"
        )
    thinking = data.get("thinking")
    if thinking is not None and thinking not in THINKING_STYLES:
        raise ValueError(f"{where}: thinking must be budget or adaptive, not {thinking!r}")
    base_url = data.get("baseUrl")
    if base_url is not None and not isinstance(base_url, str):
        raise ValueError(f"{where}: baseUrl must be a string such as http://localhost:11434/v1")
    return ModelInfo(
        id=model_id,
        name=str(data.get("name", model_id)),
        vendor=vendor,
        context_window=context_window,
        max_output=max_output,
        pricing=Pricing(
            input=_price(prices, "input", where),
            output=_price(prices, "output", where),
            cache_write_5m=_price(
                prices, "cacheWrite5m" if "cacheWrite5m" in prices else "cacheWrite", where
            ),
            cache_write_1h=_price(prices, "cacheWrite1h", where),
            cache_read=_price(prices, "cacheRead", where),
        ),
        min_cache_tokens=_positive_int(data, "minCacheTokens", where, default=1024),
        reasoning=bool(data.get("reasoning", False)),
        images=bool(data.get("images", False)),
        base_url=base_url or None,
        bills_cache_writes=bool(data.get("billsCacheWrites", False)),
        thinking=thinking,
    )


def load_models_file(path: Path) -> list[ModelInfo]:
    """Models from a JSON or YAML file: `{"models": [{id, contextWindow, maxOutput, ...}]}`.

    Raises ValueError naming the file, the entry and the field when something is wrong.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the models file ({exc.strerror})") from exc
    try:
        data = yaml.safe_load(text) if path.suffix in YAML_SUFFIXES else json.loads(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a valid models file: {exc}") from exc
    entries = data.get("models") if isinstance(data, Mapping) else data
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a list of models under 'models'")
    models: list[ModelInfo] = []
    for index, entry in enumerate(entries):
        try:
            models.append(model_from_json(entry))
        except ValueError as exc:
            raise ValueError(f"{path}: models[{index}]: {exc}") from exc
    return models


def _positive_int(data: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{where}: {key} must be a positive whole number of tokens, not {value!r}")
    return value


def _price(prices: Mapping[str, Any], key: str, where: str) -> float:
    value = prices.get(key, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{where}: pricing.{key} must be a non-negative number, not {value!r}")
    return float(value)
