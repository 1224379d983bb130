"""The providers: one description each, the one table every other place reads.

A provider is a value of the setting `provider`: a wire API (whose module, built on an
official SDK, speaks it; with its rules for caching and thinking), the API key it reads, the
model vendors it serves and its default model. The settings, the key lookup, the model
picker, the cache lifetimes, the CLI and the editor extension (its generated `providers.ts`,
checked in CI) all read `PROVIDERS`.

Adding a provider: its module (a `Provider`, see `llm/stream.py`) and one `ProviderSpec`
below (with a `WireApi` when it speaks a new API). Nothing here imports an SDK: a provider's
module is imported when the first one is made, so the server starts at once. The agent makes
its providers deferred (`create_provider(deferred=True)`): the settings and the key are
checked at once, and the SDK (a second or more of imports) is loaded and its client made at
the first model call, the import on a thread of its own (`load_sdk`), so that opening a
session and showing its transcript never wait for an SDK.

`sim` is the built-in simulator: the agent layer starts it and passes its base URL here; it
speaks the Anthropic Messages API and checks no key.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from concurrent.futures import Future
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
from agent_server.llm.messages import Context
from agent_server.llm.models import ModelInfo, Vendor
from agent_server.llm.stream import (
    CacheRetention,
    CallOptions,
    MessageAssembler,
    Provider,
    StreamEvent,
)


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
    # Whether a thinking level (CallOptions.thinking) changes what the model is asked.
    thinks: Callable[[ModelInfo], bool]
    # Whether the thinking level is part of the cached prefix: a change re-reads the
    # messages without the cache (Anthropic caches messages per thinking setting).
    thinking_in_prefix: bool
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


def _thinks_in_its_style(model: ModelInfo) -> bool:
    """Anthropic's Messages API: a model with a thinking style (a budget, or adaptive
    thinking with an effort: ModelInfo.thinking)."""
    return model.thinking is not None


def _reasons(model: ModelInfo) -> bool:
    """OpenAI's APIs: a reasoning model (`reasoning.effort`, `reasoning_effort`)."""
    return model.reasoning


ANTHROPIC_MESSAGES = WireApi(
    "anthropic-messages",
    "agent_server.llm.anthropic:AnthropicProvider",
    anthropic_cache_ttl,
    anthropic_bills_cache_writes,
    _thinks_in_its_style,
    thinking_in_prefix=True,
    compaction=True,
    context_editing=True,
)
OPENAI_CHAT = WireApi(
    "openai-chat",
    "agent_server.llm.openai_chat:OpenAIChatProvider",
    openai_chat_cache_ttl,
    openai_bills_cache_writes,
    _reasons,
    thinking_in_prefix=False,
)
OPENAI_RESPONSES = WireApi(
    "openai-responses",
    "agent_server.llm.openai_responses:OpenAIResponsesProvider",
    openai_responses_cache_ttl,
    openai_bills_cache_writes,
    _reasons,
    thinking_in_prefix=False,
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


def serves(provider: str, model: ModelInfo, base_url: str | None = None) -> bool:
    """Whether `provider` can call `model` (an unknown provider serves nothing). The
    provider's own models, or any with a `base_url` setting: that names a server of the
    user's (a proxy, a gateway, the simulator) which serves what it serves, as a session
    started with the model is sent there; a model it lacks is the server's own error."""
    spec = PROVIDERS.get(provider)
    return spec is not None and (bool(base_url) or spec.serves(model))


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


def can_think(api: str, model: ModelInfo) -> bool:
    """Whether the thinking level changes what `api` asks of `model`."""
    wire = WIRE_APIS.get(api)
    return wire is not None and wire.thinks(model)


def thinking_in_prefix(api: str) -> bool:
    """Whether `api` caches the messages per thinking level (a change re-reads them)."""
    wire = WIRE_APIS.get(api)
    return wire is not None and wire.thinking_in_prefix


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


_sdk_imports: dict[str, Future[None]] = {}
_sdk_lock = threading.Lock()


def load_sdk(provider: str) -> Future[None]:
    """Start importing the module of `provider`'s API (and so its SDK) on a thread of its
    own, once per process; the future is done when it is imported (or holds the import's
    error). Waiting on it never takes a thread of the event loop's pool."""
    wire = provider_spec(provider).api
    with _sdk_lock:
        loading = _sdk_imports.get(wire.name)
        if loading is None:
            loading = _sdk_imports[wire.name] = Future()
            # Running from now on, so that it cannot be cancelled: a caller whose wait is
            # cancelled (a turn cancelled while the SDK loads) would otherwise cancel the
            # process's one import, and every later call would end "cancelled" at once.
            loading.set_running_or_notify_cancel()
            threading.Thread(
                target=_import, args=(wire, loading), name=f"import-{wire.name}", daemon=True
            ).start()
    return loading


def _import(wire: WireApi, done: Future[None]) -> None:
    try:
        wire.provider_class()
    except BaseException as error:  # the caller waiting on `done` raises it
        done.set_exception(error)
    else:
        done.set_result(None)


def preload_sdks(providers: Iterable[str] = PROVIDER_NAMES) -> None:
    """Import the SDKs of `providers` now (in a background thread, say, while the editor
    starts or the user types): returns when they are imported."""
    for loading in [load_sdk(provider) for provider in providers]:
        loading.result()


_tls: Any = None


def http_client_options(base_url: str | None) -> dict[str, Any]:
    """Options for an SDK's default HTTP client (`DefaultAsyncHttpxClient`) talking to
    `base_url`. A plain http:// server (a local model, the simulator, a proxy on loopback)
    gets no TLS set up, and no redirects, so that nothing it answers can lead the client to
    a TLS server; any other gets the process's one TLS context (loading the system's
    certificates costs ~30 ms of CPU, once per process rather than once per session)."""
    global _tls
    if base_url is not None and base_url.lower().startswith("http://"):
        return {"verify": False, "follow_redirects": False}
    with _sdk_lock:
        if _tls is None:
            import httpx2

            _tls = httpx2.create_ssl_context()
        return {"verify": _tls}


class DeferredProvider:
    """A provider made at its first call (`make`, once), after its SDK is imported off the
    event loop (`load_sdk`). Made before that, a session costs no SDK: opening one, showing
    its transcript, switching its model. `make`'s failures (a client the SDK refuses) are
    ConfigErrors."""

    def __init__(self, provider: str, make: Callable[[], Provider]) -> None:
        self.provider = provider
        self.api = provider_spec(provider).api.name
        self._make = make
        self._made: Provider | None = None

    @property
    def made(self) -> Provider | None:
        """The provider, once the first call made it."""
        return self._made

    async def ready(self) -> Provider:
        """The provider, made now if it was not."""
        if self._made is None:
            try:
                await asyncio.wrap_future(load_sdk(self.provider))
            except ImportError as error:
                raise ConfigError(
                    f"Cannot load the SDK that {provider_spec(self.provider).label} is called "
                    f"through ({error}): reinstall agent-server (pip install --force-reinstall "
                    "agent-server) and restart it."
                ) from error
            if self._made is None:
                try:
                    self._made = self._make()
                except ConfigError:
                    raise
                except Exception as error:
                    raise ConfigError(
                        f"Cannot make the client of {provider_spec(self.provider).label}: "
                        f"{error}. Check the 'baseUrl' setting."
                    ) from error
        return self._made

    async def stream(
        self,
        model: ModelInfo,
        context: Context,
        options: CallOptions,
        assembler: MessageAssembler | None = None,
    ) -> AsyncIterator[StreamEvent]:
        provider = await self.ready()
        async for event in provider.stream(model, context, options, assembler):
            yield event

    async def aclose(self) -> None:
        if self._made is not None:
            await self._made.aclose()


def create_provider(
    provider: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    api_key: str | None = None,
    model: ModelInfo | None = None,
    env: Mapping[str, str] | None = None,
    deferred: bool = False,
    **client_options: Any,
) -> Provider:
    """The provider for the settings `provider`, `baseUrl` and `apiKeyEnv`.

    The key is `api_key` when given, else read from the variable `api_key_env` (default
    the provider's, e.g. ANTHROPIC_API_KEY) in `env` (default os.environ). A server at a
    custom base URL (the setting, or a user-defined model's `baseUrl`) may need no key: it
    is then sent a placeholder. Without a base URL a missing key raises MissingApiKeyError
    naming the variable. `client_options` go to the SDK client (timeout, http_client,
    default_headers, ...); the SDK never retries on its own. `deferred`: the checks now, the
    SDK and its client at the first call (`DeferredProvider`).
    """
    spec = provider_spec(provider)
    url = base_url or (model.base_url if model is not None else None)
    if spec.key is None:
        if not url:
            raise ConfigError(spec.no_base_url)
        arguments: dict[str, Any] = {"api_key_env": None, "provider_name": spec.label}
        key = api_key
    else:
        variable = api_key_env or spec.key.variable
        key = api_key or read_api_key(variable, env)
        if key is None and not url:
            raise MissingApiKeyError(variable, spec.label)
        name = f"the server at {url}" if url else spec.label
        arguments = {"api_key_env": variable, "provider_name": name}

    def make() -> Provider:
        # The SDKs take seconds to import: they load when a provider is first made.
        return spec.api.provider_class()(key, url, **arguments, **client_options)

    return DeferredProvider(provider, make) if deferred else make()
