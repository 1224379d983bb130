"""The AsyncOpenAI client both OpenAI APIs (Chat Completions and Responses) share, and the
parts of their requests that are the same.

OpenAI caches prompt prefixes by itself; a request helps it by sending `prompt_cache_key`
(the session id, so that one session's requests land on the same cache) and says how long to
keep them: for models before GPT-5.6, `prompt_cache_retention: "24h"` with the long
retention; from GPT-5.6 on (`ModelInfo.bills_cache_writes`), `prompt_cache_options.ttl`
(`30m`, or `12h` on the Responses API with the long retention), never both (the API refuses
them together). Those models bill cache writes, so a call that should cache nothing (the
`none` retention, a one-off summary prompt) sends `prompt_cache_options.mode: "explicit"`
without breakpoints, which turns caching off. Any OpenAI-compatible server works by base
URL; a local one (Ollama, vLLM, llama.cpp) needs no key, and gets none of the OpenAI-only
fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import openai

from agent_server.llm.credentials import PLACEHOLDER_API_KEY
from agent_server.llm.models import ModelInfo, speaks_openai_extensions
from agent_server.llm.provider_errors import ErrorContext
from agent_server.llm.provider_stream import SdkStream
from agent_server.llm.providers import OPENAI_KEY, http_client_options
from agent_server.llm.stream import CacheRetention, CallOptions

# Cache retention OpenAI calls "extended": up to 24 hours (models before GPT-5.6).
EXTENDED_RETENTION = "24h"
# `prompt_cache_options.ttl` (GPT-5.6 on): 30 minutes on both APIs; the Responses API also
# keeps entries 12 hours.
SHORT_CACHE_TTL = "30m"
RESPONSES_LONG_CACHE_TTL = "12h"


def cache_fields(model: ModelInfo, options: CallOptions, long_ttl: str) -> dict[str, Any]:
    """prompt_cache_key (the session id) and how long to keep the cache.

    `long_ttl` is the longest `prompt_cache_options.ttl` the API offers (Chat Completions
    `30m`, Responses `12h`), sent with the long retention to models that take it.
    """
    if not speaks_openai_extensions(model):
        return {}
    caching = options.cache_retention != "none" and options.cache != "none"
    if not caching:
        # Explicit mode with no breakpoint caches nothing, so nothing is written and billed.
        return {"prompt_cache_options": {"mode": "explicit"}} if model.bills_cache_writes else {}
    fields: dict[str, Any] = {}
    if options.session_id:
        fields["prompt_cache_key"] = options.session_id
    if model.bills_cache_writes:
        ttl = long_ttl if options.cache_retention == "long" else SHORT_CACHE_TTL
        fields["prompt_cache_options"] = {"ttl": ttl}
    elif options.cache_retention == "long":
        fields["prompt_cache_retention"] = EXTENDED_RETENTION
    return fields


def write_retention(options: CallOptions, long_ttl: str) -> CacheRetention:
    """Which write price this call's cache writes are billed at, when the provider does not
    split them: the long one only when the request asked for a TTL longer than 30 minutes."""
    if options.cache_retention == "long" and long_ttl != SHORT_CACHE_TTL:
        return "long"
    return "short"


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
        api_key_env: str | None = OPENAI_KEY.variable,
        provider_name: str | None = None,
        **client_options: Any,
    ) -> None:
        client_options["max_retries"] = 0
        if "http_client" not in client_options:
            options = http_client_options(base_url)
            client_options["http_client"] = openai.DefaultAsyncHttpxClient(**options)
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

    def _error_event(self, stream: SdkStream, event: str | None, data: Any) -> Exception | None:
        """An event whose data holds an `error`, as the SDK's stream raises it (APIError)."""
        if not isinstance(data, Mapping) or not data.get("error"):
            return None
        error = data["error"]
        message = error.get("message") if isinstance(error, Mapping) else error
        if not message or not isinstance(message, str):
            message = "An error occurred during streaming"
        return openai.APIError(message=message, request=stream.response.request, body=error)

    async def aclose(self) -> None:
        await self._client.close()
