"""The providers: one description each, the one table every other place reads.

A provider is a value of the setting `provider`: a wire API (whose module, built on an
official SDK, speaks it), the API key it reads, the model vendors it serves and its default
model. The settings, the key lookup, the model picker, the cache lifetimes, the CLI and the
editor extension (its generated `providers.ts`, checked in CI) all read `PROVIDERS`.

Adding a provider: its module (a `Provider`, see `llm/stream.py`) and one `ProviderSpec`
below (with a `WireApi` when it speaks a new API). Nothing here imports an SDK: a provider's
module is imported when the first one is made, so the server starts at once.

`sim` is the built-in simulator: the agent layer starts it and passes its base URL here; it
speaks the Anthropic Messages API and checks no key.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_server.errors import ConfigError, MissingApiKeyError
from agent_server.llm.cache_ttl import (
    anthropic_bills_cache_writes,
    anthropic_cache_ttl,
    openai_bills_cache_writes,
    openai_chat_cache_ttl,
    openai_responses_cache_ttl,
)
from agent_server.llm.credentials import ApiKey, read_api_key
from agent_server.llm.models import ModelInfo, Vendor
from agent_server.llm.stream import CacheRetention, Provider


@dataclass(frozen=True, slots=True)
class WireApi:
    """A provider API as its module speaks it. `name` is recorded with every answer in the
    ledger; `implementation` ("module:Class") is imported when a provider is first made."""

    name: str
    implementation: str
    # Seconds a cached prefix lives after its last use (None: nothing cached, or unknown).
    cache_ttl: Callable[[ModelInfo, CacheRetention], float | None]
    # Whether writing the cache is billed at its own price rather than as plain input.
    bills_cache_writes: Callable[[ModelInfo], bool]
    # Whether the provider compacts on request, its answer one CompactionContent (the setting
    # `compaction.engine: "provider"`): Anthropic's on-demand compaction, OpenAI's
    # `POST /responses/compact`.
    compaction: bool = False
    # Whether the provider clears old tool results itself (the setting
    # `compaction.clearToolResults`): Anthropic's context editing.
    context_editing: bool = False

    def provider_class(self) -> Callable[..., Provider]:
        module, _, name = self.implementation.partition(":")
        cls: Callable[..., Provider] = getattr(importlib.import_module(module), name)
        return cls


ANTHROPIC_MESSAGES = WireApi(
    "anthropic-messages",
    "agent_server.llm.anthropic:AnthropicProvider",
    anthropic_cache_ttl,
    anthropic_bills_cache_writes,
    compaction=True,
    context_editing=True,
)
OPENAI_CHAT = WireApi(
    "openai-chat",
    "agent_server.llm.openai_chat:OpenAIChatProvider",
    openai_chat_cache_ttl,
    openai_bills_cache_writes,
)
OPENAI_RESPONSES = WireApi(
    "openai-responses",
    "agent_server.llm.openai_responses:OpenAIResponsesProvider",
    openai_responses_cache_ttl,
    openai_bills_cache_writes,
    compaction=True,
)


ANTHROPIC_KEY = ApiKey("ANTHROPIC_API_KEY", "Anthropic")
OPENAI_KEY = ApiKey("OPENAI_API_KEY", "OpenAI")


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """One value of the setting `provider`."""

    name: str
    api: WireApi
    # The key it reads; None: it checks none (it then needs a base URL, `no_base_url` says
    # where one comes from).
    key: ApiKey | None
    vendors: frozenset[Vendor]  # whose models it can call (the picker, a switch, ACP)
    default_model: str
    summary: str  # one line, for the editor's settings
    no_base_url: str = ""

    @property
    def label(self) -> str:
        """Who serves it, as messages name it."""
        return self.key.owner if self.key is not None else "the simulator"

    @property
    def key_variable(self) -> str:
        """The variable its key is read from by default ("" when it reads none)."""
        return self.key.variable if self.key is not None else ""

    @property
    def description(self) -> str:
        """The editor's description of the setting's value (the extension's package.json)."""
        if self.key is None:
            return self.summary
        return f"{self.summary} ({self.key.variable})"

    def serves(self, model: ModelInfo) -> bool:
        return model.vendor in self.vendors


# OpenAI's models, and the user's on OpenAI-compatible servers (a models file).
OPENAI_COMPATIBLE: frozenset[Vendor] = frozenset({"openai", "local"})


def _table(*specs: ProviderSpec) -> Mapping[str, ProviderSpec]:
    return {spec.name: spec for spec in specs}


PROVIDERS: Mapping[str, ProviderSpec] = _table(
    ProviderSpec(
        "anthropic",
        ANTHROPIC_MESSAGES,
        ANTHROPIC_KEY,
        frozenset({"anthropic"}),
        "claude-sonnet-5-5",
        "Anthropic Messages API",
    ),
    ProviderSpec(
        "openai-chat",
        OPENAI_CHAT,
        OPENAI_KEY,
        OPENAI_COMPATIBLE,
        "gpt-5.5",
        "OpenAI Chat Completions, or any OpenAI-compatible server",
    ),
    ProviderSpec(
        "openai-responses",
        OPENAI_RESPONSES,
        OPENAI_KEY,
        OPENAI_COMPATIBLE,
        "gpt-5.5",
        "OpenAI Responses API",
    ),
    ProviderSpec(
        "sim",
        ANTHROPIC_MESSAGES,
        None,
        frozenset({"sim"}),
        "sim-small",
        "The built-in simulator: no API key, no network",
        no_base_url=(
            "The 'sim' provider needs the simulator's base URL; the agent layer starts the "
            "simulator and passes it (or run `agent-server sim` and set 'baseUrl')."
        ),
    ),
)
PROVIDER_NAMES: tuple[str, ...] = tuple(PROVIDERS)
DEFAULT_PROVIDER = "anthropic"
WIRE_APIS: Mapping[str, WireApi] = {spec.api.name: spec.api for spec in PROVIDERS.values()}
API_KEYS: tuple[ApiKey, ...] = tuple(
    dict.fromkeys(spec.key for spec in PROVIDERS.values() if spec.key is not None)
)


def provider_spec(name: str) -> ProviderSpec:
    """The description of the setting `provider: name`; ConfigError naming the choices."""
    spec = PROVIDERS.get(name)
    if spec is None:
        raise ConfigError(
            f"Unknown provider {name!r}: the setting 'provider' must be one of "
            f"{', '.join(PROVIDER_NAMES)}."
        )
    return spec


def serves(provider: str, model: ModelInfo) -> bool:
    """Whether `provider` can call `model` (an unknown provider serves nothing)."""
    spec = PROVIDERS.get(provider)
    return spec is not None and spec.serves(model)


def cache_ttl(api: str, model: ModelInfo, retention: CacheRetention) -> float | None:
    """Seconds `api` keeps `model`'s cached prefix after its last use with `retention`; None
    when nothing is cached or the server's rules are unknown."""
    wire = WIRE_APIS.get(api)
    return wire.cache_ttl(model, retention) if wire is not None else None


def compacts(api: str) -> bool:
    """Whether `api` compacts the conversation itself on request."""
    wire = WIRE_APIS.get(api)
    return wire is not None and wire.compaction


def clears_tool_results(api: str) -> bool:
    """Whether `api` clears old tool results itself (context editing)."""
    wire = WIRE_APIS.get(api)
    return wire is not None and wire.context_editing


def bills_cache_writes(api: str, model: ModelInfo) -> bool:
    """Whether `api` bills writing `model`'s cache (at its own price) rather than charging
    uncached tokens at the input price."""
    wire = WIRE_APIS.get(api)
    return wire is not None and wire.bills_cache_writes(model)


def resolve_api_key(
    provider_name: str,
    api_key_env: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> str:
    """The key in `api_key_env` (default: the provider's usual variable).

    Raises MissingApiKeyError, naming the variable, when it is unset or blank.
    """
    spec = provider_spec(provider_name)
    variable = api_key_env or spec.key_variable
    key = read_api_key(variable, env) if variable else None
    if key is None:
        raise MissingApiKeyError(variable, spec.label)
    return key


def preload_sdks() -> None:
    """Import the provider SDKs now (e.g. in a background thread while the editor starts)."""
    for wire in WIRE_APIS.values():
        wire.provider_class()


def create_provider(
    provider: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    api_key: str | None = None,
    model: ModelInfo | None = None,
    env: Mapping[str, str] | None = None,
    **client_options: Any,
) -> Provider:
    """The provider for the settings `provider`, `baseUrl` and `apiKeyEnv`.

    The key is `api_key` when given, else read from the variable `api_key_env` (default
    the provider's, e.g. ANTHROPIC_API_KEY) in `env` (default os.environ). A server at a
    custom base URL (the setting, or a user-defined model's `baseUrl`) may need no key: it
    is then sent a placeholder. Without a base URL a missing key raises MissingApiKeyError
    naming the variable. `client_options` go to the SDK client (timeout, http_client,
    default_headers, ...); the SDK never retries on its own.
    """
    spec = provider_spec(provider)
    url = base_url or (model.base_url if model is not None else None)
    # The SDKs take seconds to import: they load when a provider is first made, so that the
    # server starts at once.
    make = spec.api.provider_class()
    if spec.key is None:
        if not url:
            raise ConfigError(spec.no_base_url)
        return make(api_key, url, api_key_env=None, provider_name=spec.label, **client_options)
    variable = api_key_env or spec.key.variable
    key = api_key or read_api_key(variable, env)
    if key is None and not url:
        raise MissingApiKeyError(variable, spec.label)
    name = f"the server at {url}" if url else spec.label
    return make(key, url, api_key_env=variable, provider_name=name, **client_options)
