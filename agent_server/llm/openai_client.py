"""The AsyncOpenAI client both OpenAI APIs (Chat Completions and Responses) share, and the
parts of their requests that are the same.

OpenAI caches prompt prefixes by itself; a request helps it by sending `prompt_cache_key`
(the session id, so that one session's requests land on the same cache) and, for the long
retention, `prompt_cache_retention: "24h"`. Any OpenAI-compatible server works by base URL;
a local one (Ollama, vLLM, llama.cpp) needs no key, and gets none of the OpenAI-only fields.
"""

from __future__ import annotations

from typing import Any

import openai

from agent_server.llm.credentials import PLACEHOLDER_API_KEY
from agent_server.llm.models import ModelInfo
from agent_server.llm.provider_errors import ErrorContext
from agent_server.llm.stream import CallOptions

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
# Cache retention OpenAI calls "extended": up to 24 hours.
EXTENDED_RETENTION = "24h"


def speaks_openai_extensions(model: ModelInfo) -> bool:
    """Whether the server behind `model` knows OpenAI's own fields (prompt_cache_key, ...).

    OpenAI and the built-in simulator do; a user-defined local model's server may reject
    or ignore them, so none are sent to it.
    """
    return model.vendor in ("openai", "sim")


def cache_fields(model: ModelInfo, options: CallOptions) -> dict[str, Any]:
    """prompt_cache_key (the session id) and, for the long retention, extended retention."""
    if not speaks_openai_extensions(model):
        return {}
    if options.cache_retention == "none" or not options.cache_breakpoints:
        return {}
    fields: dict[str, Any] = {}
    if options.session_id:
        fields["prompt_cache_key"] = options.session_id
    if options.cache_retention == "long":
        fields["prompt_cache_retention"] = EXTENDED_RETENTION
    return fields


def data_url(mime_type: str, data: str) -> str:
    return f"data:{mime_type};base64,{data}"


class OpenAIClientProvider:
    """Holds the AsyncOpenAI client; the two OpenAI provider classes build on it.

    The SDK's own retries are off (`max_retries=0`): the agent layer retries with its own
    backoff and tells the user. `client_options` go to `AsyncOpenAI` (timeout, http_client,
    default_headers, organization, project, ...).
    """

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None = None,
        *,
        api_key_env: str | None = DEFAULT_API_KEY_ENV,
        provider_name: str | None = None,
        **client_options: Any,
    ) -> None:
        client_options["max_retries"] = 0
        key = api_key or PLACEHOLDER_API_KEY
        self._client = openai.AsyncOpenAI(api_key=key, base_url=base_url, **client_options)
        name = provider_name or ("OpenAI" if base_url is None else f"the server at {base_url}")
        self._errors = ErrorContext(
            provider=name,
            api_key_env=api_key_env,
            base_url=base_url,
            secrets=(key,) if api_key else (),
        )

    @property
    def client(self) -> openai.AsyncOpenAI:
        return self._client

    async def aclose(self) -> None:
        await self._client.close()
