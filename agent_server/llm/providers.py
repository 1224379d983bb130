"""Provider construction from settings: `provider`, `baseUrl`, `apiKeyEnv` (and the model,
for a user-defined model's own base URL).

`sim` is the built-in simulator: the agent layer starts it and passes its base URL here; it
speaks the Anthropic Messages API and checks no key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_server.errors import ConfigError, MissingApiKeyError
from agent_server.llm.credentials import PLACEHOLDER_API_KEY, default_api_key_env, find_api_key
from agent_server.llm.models import ModelInfo
from agent_server.llm.stream import Provider

PROVIDER_SETTINGS: tuple[str, ...] = ("anthropic", "openai-chat", "openai-responses", "sim")
# The API each provider setting speaks (the simulator speaks Anthropic's).
PROVIDER_APIS: Mapping[str, str] = {
    "anthropic": "anthropic-messages",
    "openai-chat": "openai-chat",
    "openai-responses": "openai-responses",
    "sim": "anthropic-messages",
}


def preload_sdks() -> None:
    """Import the provider SDKs now (e.g. in a background thread while the editor starts)."""
    import agent_server.llm.anthropic
    import agent_server.llm.openai_chat
    import agent_server.llm.openai_responses  # noqa: F401


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
    ANTHROPIC_API_KEY / OPENAI_API_KEY) in `env` (default os.environ). A server
    at a custom base URL (the setting, or a user-defined model's `baseUrl`) may need no key:
    it is then sent a placeholder. Without a base URL a missing key raises
    MissingApiKeyError naming the variable. `client_options` go to the SDK client (timeout,
    http_client, default_headers, ...); the SDK never retries on its own.
    """
    if provider not in PROVIDER_SETTINGS:
        raise ConfigError(
            f"Unknown provider {provider!r}: the setting 'provider' must be one of "
            f"{', '.join(PROVIDER_SETTINGS)}."
        )
    # The SDKs take seconds to import: load them when a provider is first made, so that the
    # server starts at once.
    from agent_server.llm.anthropic import AnthropicProvider
    from agent_server.llm.openai_chat import OpenAIChatProvider
    from agent_server.llm.openai_responses import OpenAIResponsesProvider

    url = base_url or (model.base_url if model is not None else None)
    if provider == "sim":
        if not url:
            raise ConfigError(
                "The 'sim' provider needs the simulator's base URL; the agent layer starts the "
                "simulator and passes it (or run `agent-server sim` and set 'baseUrl')."
            )
        return AnthropicProvider(
            api_key or PLACEHOLDER_API_KEY,
            url,
            api_key_env=None,
            provider_name="the simulator",
            **client_options,
        )
    variable = api_key_env or default_api_key_env(provider)
    key = api_key or find_api_key(provider, variable, env=env)
    if key is None and not url:
        raise MissingApiKeyError(variable, "Anthropic" if provider == "anthropic" else "OpenAI")
    name = None if not url else f"the server at {url}"
    if provider == "anthropic":
        return AnthropicProvider(
            key or PLACEHOLDER_API_KEY,
            url,
            api_key_env=variable,
            provider_name=name or "Anthropic",
            **client_options,
        )
    cls = OpenAIChatProvider if provider == "openai-chat" else OpenAIResponsesProvider
    return cls(key, url, api_key_env=variable, provider_name=name, **client_options)
