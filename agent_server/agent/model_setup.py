"""From settings to a provider and models: which API, which model, which key.

The "sim" provider starts the built-in simulator in this process, on a free loopback port,
once, and talks to it through the Anthropic SDK like any other server.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path

from agent_server.agent.session_config import ModelSetup
from agent_server.agent.settings import AgentSettings
from agent_server.errors import UnknownModelError
from agent_server.llm.credentials import stored_keys
from agent_server.llm.models import (
    ModelInfo,
    ModelRegistry,
    load_models_file,
    model_from_json,
)
from agent_server.llm.providers import (
    API_KEYS,
    DeferredProvider,
    create_provider,
    provider_spec,
    serves,
)
from agent_server.llm.stream import Provider

_sim_lock = threading.Lock()
_sim_base_url: str | None = None
_sim_handle: object | None = None


def shared_simulator_url() -> str:
    """The base URL of this process's simulator, started on first use."""
    global _sim_base_url, _sim_handle
    with _sim_lock:
        if _sim_base_url is None:
            from agent_server.sim.server import SimServer, Simulator

            handle = SimServer(Simulator(keep_records=200)).run_in_thread()
            _sim_handle = handle
            _sim_base_url = str(handle.base_url)
        return _sim_base_url


def model_registry(settings: AgentSettings) -> ModelRegistry:
    registry = ModelRegistry()
    if settings.models_file:
        for model in load_models_file(Path(settings.models_file).expanduser()):
            registry.add(model)
    if (local := served_model(settings, registry)) is not None:
        registry.add(local)
    return registry


DEFAULT_LOCAL_WINDOW = 32768


def served_model(settings: AgentSettings, registry: ModelRegistry) -> ModelInfo | None:
    """A `model` nobody defined, asked of an OpenAI-compatible server at `baseUrl` (Ollama,
    llama.cpp, vLLM): taken as that server's, with the `contextWindow` setting (else 32k,
    said in README's local-model example) and no prices. None when it needs no defining."""
    if (
        not settings.model
        or not settings.base_url
        or "local" not in provider_spec(settings.provider).vendors
        or registry.get(settings.model) is not None
    ):
        return None
    window = settings.context_window or DEFAULT_LOCAL_WINDOW
    return model_from_json({
        "id": settings.model,
        "contextWindow": window,
        "maxOutput": max(1024, min(8192, window // 4)),
        "baseUrl": settings.base_url,
    })


def offered_models(settings: AgentSettings) -> list[ModelInfo]:
    """The models to offer for the settings' provider, for a model picker."""
    return [model for model in model_registry(settings) if serves(settings.provider, model)]


def resolve_model(
    model_id: str | None, settings: AgentSettings, registry: ModelRegistry
) -> ModelInfo:
    wanted = model_id or provider_spec(settings.provider).default_model
    model = registry.get(wanted)
    if model is None:
        # The provider's own models: naming one it does not serve would fail next.
        served = [m.id for m in registry if serves(settings.provider, m)]
        known = ", ".join(served or [m.id for m in registry])
        raise UnknownModelError(
            f"unknown model {wanted!r}: use one of {known}, or define it in a models file "
            "(the modelsFile setting, --models-file); a model of a local OpenAI-compatible "
            "server needs only the provider openai-chat and its baseUrl (--base-url)"
        )
    return model


def open_provider(
    settings: AgentSettings, model: ModelInfo, env: Mapping[str, str] | None = None
) -> Provider:
    """The settings' provider, deferred: the key is checked now, the SDK is loaded and the
    client made at the first model call (the built-in simulator started then too)."""
    if provider_spec(settings.provider).key is None:
        # The simulator needs no key: the provider sends a placeholder, not a secret.
        if settings.base_url:
            return create_provider(settings.provider, base_url=settings.base_url, deferred=True)
        return DeferredProvider(
            settings.provider,
            lambda: create_provider(settings.provider, base_url=shared_simulator_url()),
        )
    return create_provider(
        settings.provider,
        base_url=settings.base_url or model.base_url,
        api_key_env=settings.key_variable,
        env=env if env is not None else os.environ,
        deferred=True,
    )


def connect(settings: AgentSettings, env: Mapping[str, str] | None = None) -> ModelSetup:
    """The provider and models for these settings. Raises ConfigError (e.g. a missing key,
    named) before any request is made."""
    registry = model_registry(settings)
    model = resolve_model(settings.model, settings, registry)
    summary_model = (
        resolve_model(settings.compaction.model, settings, registry)
        if settings.compaction.model
        else model
    )
    return ModelSetup(
        provider=open_provider(settings, model, env), model=model, summary_model=summary_model
    )


def secrets_of(settings: AgentSettings, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The secret values a session must scrub from tool output."""
    env = env if env is not None else os.environ
    names = {settings.key_variable, *(key.variable for key in API_KEYS)}
    stored = stored_keys()  # `agent-server login`'s: never in a command's environment either
    values = {value for name in names if name and (value := env.get(name) or stored.get(name))}
    return tuple(sorted(values | set(stored.values())))
