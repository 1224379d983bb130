"""API keys: read from the environment variable the settings name, never from anywhere else.

A key is never logged and never part of a message; a missing one is a MissingApiKeyError
that names the variable to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from agent_server.errors import MissingApiKeyError

# What a server that checks no key (the simulator, a local OpenAI-compatible server) is sent:
# the SDKs insist on some key. It is not a secret and is never scrubbed from messages.
PLACEHOLDER_API_KEY = "no-key-needed"

# The variable each provider setting reads by default (setting `apiKeyEnv` overrides it).
DEFAULT_API_KEY_ENV: Mapping[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
}

_DISPLAY_NAMES: Mapping[str, str] = {
    "anthropic": "Anthropic",
    "openai-chat": "OpenAI",
    "openai-responses": "OpenAI",
}


def default_api_key_env(provider_name: str) -> str:
    """The variable a provider reads when `apiKeyEnv` is not set."""
    return DEFAULT_API_KEY_ENV.get(
        provider_name, f"{provider_name.upper().replace('-', '_')}_API_KEY"
    )


def resolve_api_key(
    provider_name: str,
    api_key_env: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> str:
    """The key in `api_key_env` (default: the provider's usual variable).

    Raises MissingApiKeyError, naming the variable, when it is unset or blank.
    """
    variable = api_key_env or default_api_key_env(provider_name)
    value = (os.environ if env is None else env).get(variable, "").strip()
    if not value:
        raise MissingApiKeyError(variable, _DISPLAY_NAMES.get(provider_name, provider_name))
    return value


def find_api_key(
    provider_name: str,
    api_key_env: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """Like `resolve_api_key`, but None instead of an error (for servers that need no key)."""
    try:
        return resolve_api_key(provider_name, api_key_env, env=env)
    except MissingApiKeyError:
        return None
