"""API keys: read from the environment variable the settings name, never from anywhere else.

A key is never logged and never part of a message; a missing one is a MissingApiKeyError
that names the variable to set. Which key each provider reads is its description's
(`llm/providers.py`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

# What a server that checks no key (the simulator, a local OpenAI-compatible server) is sent:
# the SDKs insist on some key. It is not a secret and is never scrubbed from messages.
PLACEHOLDER_API_KEY = "no-key-needed"


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key several providers may share: the variable it is read from unless the
    setting `apiKeyEnv` names another, and whose key it is (named in messages; lower-cased,
    the extension's stored secret)."""

    variable: str
    owner: str

    @property
    def family(self) -> str:
        return self.owner.lower()



def read_api_key(variable: str, env: Mapping[str, str] | None = None) -> str | None:
    """The key in `variable` of `env` (default os.environ), or None when unset or blank."""
    value = (os.environ if env is None else env).get(variable, "").strip()
    return value or None
