"""Provider failures become the right ProviderError, with what to do, and no secrets."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
import threading
from pathlib import Path

import anthropic
import httpx2
import openai
import pytest

from agent_server.errors import (
    AuthenticationError,
    ConfigError,
    ContextOverflowError,
    InvalidRequestError,
    MissingApiKeyError,
    ModelNotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    ProviderServerError,
    QuotaExceededError,
    RateLimitError,
    RequestTooLargeError,
)
from agent_server.llm.anthropic import AnthropicProvider
from agent_server.llm.openai_chat import OpenAIChatProvider
from agent_server.llm.openai_responses import OpenAIResponsesProvider
from agent_server.llm.provider_errors import (
    ErrorContext,
    StreamInterrupted,
    error_from_body,
    retry_after_seconds,
    to_provider_error,
)
from agent_server.llm.providers import (
    PROVIDERS,
    DeferredProvider,
    create_provider,
    http_client_options,
    resolve_api_key,
)

KEY = "sk-ant-api03-SECRETSECRETSECRET"
WHERE = ErrorContext("Anthropic", "ANTHROPIC_API_KEY", "claude-sonnet-5-5", None, (KEY,))


def _response(status: int, headers: dict[str, str] | None = None) -> httpx2.Response:
    request = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")
    return httpx2.Response(status, headers=headers or {}, request=request)


def _anthropic(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> Exception:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    client = anthropic.AsyncAnthropic(api_key=KEY)
    return client._make_status_error(message, body=body, response=_response(status, headers))


@pytest.mark.parametrize(
    ("status", "kind", "message", "cls", "retryable"),
    [
        (
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            RateLimitError,
            True,
        ),
        (529, "overloaded_error", "Overloaded", OverloadedError, True),
        (503, "api_error", "Service unavailable", OverloadedError, True),
        (500, "api_error", "Internal server error", ProviderServerError, True),
        (
            400,
            "invalid_request_error",
            "prompt is too long: 300000 tokens > 200000 maximum",
            ContextOverflowError,
            False,
        ),
        (
            413,
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
            ContextOverflowError,
            False,
        ),
        (401, "authentication_error", "invalid x-api-key", AuthenticationError, False),
        (
            403,
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
            PermissionDeniedError,
            False,
        ),
        (404, "not_found_error", "model: claude-nope", ModelNotFoundError, False),
        (
            400,
            "invalid_request_error",
            "messages: roles must alternate",
            InvalidRequestError,
            False,
        ),
        (
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API.",
            QuotaExceededError,
            False,
        ),
    ],
)
def test_anthropic_status_errors(
    status: int, kind: str, message: str, cls: type[ProviderError], retryable: bool
) -> None:
    error = to_provider_error(_anthropic(status, kind, message), WHERE)
    assert type(error) is cls
    assert error.retryable is retryable
    assert error.status == status
    assert error.provider == "Anthropic"
    assert message.split(":")[0] in error.message


def test_rate_limit_carries_retry_after() -> None:
    error = to_provider_error(
        _anthropic(429, "rate_limit_error", "slow down", {"retry-after": "7"}), WHERE
    )
    assert isinstance(error, RateLimitError)
    assert error.retry_after == 7.0
    assert "retried in 7s" in error.message


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"Retry-After": "2.5"}) == 2.5
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert (
        retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0)
        == 10.0
    )
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds(None) is None


def test_authentication_error_names_the_variable_and_hides_the_key() -> None:
    error = to_provider_error(
        _anthropic(401, "authentication_error", f"invalid x-api-key {KEY}"), WHERE
    )
    assert "ANTHROPIC_API_KEY" in error.message
    assert "apiKeyEnv" in error.message
    assert KEY not in error.message
    assert KEY not in repr(error.args)


def test_openai_errors() -> None:
    request = httpx2.Request("POST", "https://api.openai.com/v1/responses")
    where = ErrorContext("OpenAI", "OPENAI_API_KEY", "gpt-5.5")
    quota = openai.RateLimitError(
        "quota",
        response=httpx2.Response(429, request=request),
        body={
            "message": "You exceeded your current quota",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        },
    )
    mapped = to_provider_error(quota, where)
    assert isinstance(mapped, QuotaExceededError)
    assert not mapped.retryable
    overflow = openai.BadRequestError(
        "bad",
        response=httpx2.Response(400, request=request),
        body={
            "message": "Your input exceeds the context window of this model.",
            "code": "context_length_exceeded",
        },
    )
    mapped = to_provider_error(overflow, where)
    assert isinstance(mapped, ContextOverflowError)
    assert mapped.error_type == "context_length_exceeded"


def test_connection_failures_are_retryable() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/messages")
    connect = anthropic.APIConnectionError(request=request)
    connect.__cause__ = httpx2.ConnectError("refused")
    error = to_provider_error(connect, WHERE)
    assert isinstance(error, ProviderConnectionError)
    assert error.retryable
    assert "Could not reach" in error.message
    dropped = to_provider_error(
        StreamInterrupted("the response stream ended without message_stop"), WHERE
    )
    assert isinstance(dropped, ProviderConnectionError)
    assert dropped.retryable
    assert "dropped" in dropped.message
    # Where it was reached, once: a server known only by its URL is named by it already.
    url = "http://127.0.0.1:9"
    for provider in ("Anthropic", f"the server at {url}"):
        refused = to_provider_error(connect, ErrorContext(provider, base_url=url))
        assert refused.message.count(url) == 1, refused.message
        assert f"Could not reach {provider}" in refused.message
    read = to_provider_error(httpx2.RemoteProtocolError("peer closed connection"), WHERE)
    assert isinstance(read, ProviderConnectionError)
    timeout = to_provider_error(openai.APITimeoutError(request=request), WHERE)
    assert isinstance(timeout, ProviderConnectionError)


def test_every_retryable_failure_says_what_to_do_once_the_retries_are_used_up() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/messages")
    connect = anthropic.APIConnectionError(request=request)
    connect.__cause__ = httpx2.ConnectError("refused")
    failures = [
        _anthropic(429, "rate_limit_error", "slow down", {"retry-after": "7"}),
        _anthropic(529, "overloaded_error", "Overloaded"),
        _anthropic(500, "api_error", "Internal server error"),
        connect,
        StreamInterrupted("the response stream ended without message_stop"),
        openai.APITimeoutError(request=request),
    ]
    for failure in failures:
        error = to_provider_error(failure, WHERE)
        assert error.retryable
        assert "will be retried" in error.message  # what the retry notices show
        final = error.retries_used_up(5)
        assert type(final) is type(error)
        assert final.status == error.status
        assert "retried" not in final.message, final.message
        assert "Gave up after 5 attempts." in final.message
        assert "try again" in final.message.lower(), final.message
        assert KEY not in final.message
    overloaded = to_provider_error(_anthropic(529, "overloaded_error", "Overloaded"), WHERE)
    assert "https://status.anthropic.com" in overloaded.retries_used_up(5).message


def test_errors_inside_a_stream() -> None:
    overloaded = error_from_body({"type": "overloaded_error", "message": "Overloaded"}, WHERE)
    assert isinstance(overloaded, OverloadedError)
    failed = error_from_body(
        {
            "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model.",
        },
        WHERE,
    )
    assert isinstance(failed, ContextOverflowError)
    limited = error_from_body(
        {"code": "rate_limit_exceeded", "message": "Rate limit reached"}, WHERE
    )
    assert isinstance(limited, RateLimitError)
    unknown = error_from_body({"message": "something odd"}, WHERE)
    assert isinstance(unknown, ProviderServerError)


def test_resolve_api_key() -> None:
    assert resolve_api_key("anthropic", env={"ANTHROPIC_API_KEY": " k "}) == "k"
    assert resolve_api_key("openai-chat", "MY_KEY", env={"MY_KEY": "x"}) == "x"
    with pytest.raises(MissingApiKeyError) as raised:
        resolve_api_key("openai-responses", env={"OPENAI_API_KEY": "  "})
    assert raised.value.variable == "OPENAI_API_KEY"
    assert "OPENAI_API_KEY" in raised.value.message
    assert '"provider": "sim"' in raised.value.message


async def test_create_provider() -> None:
    anthropic_provider = create_provider("anthropic", env={"ANTHROPIC_API_KEY": KEY})
    assert isinstance(anthropic_provider, AnthropicProvider)
    assert anthropic_provider.client.max_retries == 0
    chat = create_provider(
        "openai-chat", api_key_env="WORK_KEY", env={"WORK_KEY": "sk-work-123456789"}
    )
    assert isinstance(chat, OpenAIChatProvider)
    assert chat.client.max_retries == 0
    responses = create_provider("openai-responses", env={"OPENAI_API_KEY": "sk-x-123456789"})
    assert isinstance(responses, OpenAIResponsesProvider)
    with pytest.raises(MissingApiKeyError, match="ANTHROPIC_API_KEY"):
        create_provider("anthropic", env={})
    with pytest.raises(MissingApiKeyError, match="CUSTOM_VAR"):
        create_provider("openai-chat", api_key_env="CUSTOM_VAR", env={})
    # A local server needs no key.
    local = create_provider("openai-chat", base_url="http://localhost:11434/v1", env={})
    assert str(local.client.base_url).startswith("http://localhost:11434/v1")  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="must be one of"):
        create_provider("gemini", env={})
    with pytest.raises(ConfigError, match="base URL"):
        create_provider("sim", env={})
    for provider in (anthropic_provider, chat, responses, local):
        await provider.aclose()


async def test_a_deferred_provider_checks_now_and_makes_its_client_at_the_first_call() -> None:
    with pytest.raises(MissingApiKeyError, match="ANTHROPIC_API_KEY"):
        create_provider("anthropic", env={}, deferred=True)  # the key: at once
    deferred = create_provider("anthropic", env={"ANTHROPIC_API_KEY": KEY}, deferred=True)
    assert isinstance(deferred, DeferredProvider)
    assert deferred.api == "anthropic-messages" and deferred.made is None
    await deferred.aclose()  # closing one never called is nothing
    made = await deferred.ready()
    assert isinstance(made, AnthropicProvider)
    assert await deferred.ready() is made  # once
    await deferred.aclose()


# What the stand-in SDK below waits for before its import ends.
SDK_GATE = threading.Event()


async def test_a_call_cancelled_while_the_sdk_loads_leaves_the_import_to_the_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn cancelled while its provider's SDK still imports (the first prompt of a fresh
    `agent-server acp`, the editor's Stop pressed at once) stops that call only: the import,
    one for the process, goes on, and the next call gets its provider. (It was cancelled
    with the call, and every later turn of every session ended "cancelled" at once.)"""
    (tmp_path / "slow_sdk_for_test.py").write_text(
        "from tests.llm.test_provider_errors import SDK_GATE\n"
        "SDK_GATE.wait(60)\n"
        "Provider = object\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sim = PROVIDERS["sim"]
    api = dataclasses.replace(sim.api, name="slow-sdk", implementation="slow_sdk_for_test:Provider")
    monkeypatch.setitem(PROVIDERS, "slow-sdk", dataclasses.replace(sim, name="slow-sdk", api=api))
    made = object()
    deferred = DeferredProvider("slow-sdk", lambda: made)  # type: ignore[arg-type, return-value]
    try:
        first = asyncio.create_task(deferred.ready())
        while "slow_sdk_for_test" not in sys.modules:  # the import has begun
            await asyncio.sleep(0.01)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
    finally:
        SDK_GATE.set()
    assert await deferred.ready() is made


def test_plain_http_clients_set_up_no_tls_and_follow_no_redirects() -> None:
    local = http_client_options("http://127.0.0.1:8000/v1")
    assert local == {"verify": False, "follow_redirects": False}
    remote = http_client_options("https://api.example.com")
    assert remote["verify"] is http_client_options(None)["verify"]  # one context a process
    assert "follow_redirects" not in remote


def test_errors_are_classified_without_importing_the_other_sdk() -> None:
    """A session on Anthropic never loads OpenAI's SDK (a second of imports) to classify its
    failures, and a failure of a module not imported is not one of its SDK's."""
    script = """
import sys
import anthropic, httpx2
from agent_server.llm.provider_errors import ErrorContext, is_provider_failure, to_provider_error
request = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")
body = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
error = anthropic.AsyncAnthropic(api_key="k")._make_status_error(
    "busy", body=body, response=httpx2.Response(529, request=request))
print(type(to_provider_error(error, ErrorContext("Anthropic"))).__name__)
print(is_provider_failure(ValueError()), "openai" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["OverloadedError", "False", "False"]


def _openai_status_error(status: int, body: dict[str, object]) -> Exception:
    client = openai.AsyncOpenAI(api_key="sk-test-123456789")
    request = httpx2.Request("POST", "https://api.openai.com/v1/chat/completions")
    message = str(body["error"]["message"])  # type: ignore[index]
    return client._make_status_error(
        message, body=body, response=httpx2.Response(status, request=request)
    )


@pytest.mark.parametrize(
    ("status", "body"),
    [
        # OpenAI (Aider-AI/aider#1880)
        (429, {"error": {
            "message": "Request too large for gpt-4o in organization org-2itOgSdqw0DhUY on tokens "
            "per min (TPM): Limit 30000, Requested 36278. The input or output tokens must be "
            "reduced in order to run successfully. Visit "
            "https://platform.openai.com/account/rate-limits to learn more.",
            "type": "tokens", "param": None, "code": "rate_limit_exceeded"}}),
        # Groq (cline/cline#4971)
        (413, {"error": {
            "message": "Request too large for model `moonshotai/kimi-k2-instruct` in organization "
            "`org_01abc` service tier `on_demand` on tokens per minute (TPM): Limit 10000, "
            "Requested 21247, please reduce your message size and try again. Need more tokens? "
            "Upgrade to Dev Tier today at https://console.groq.com/settings/billing",
            "type": "tokens", "code": "rate_limit_exceeded"}}),
    ],
)
def test_a_request_too_large_for_the_rate_limit_is_not_retried(
    status: int, body: dict[str, object]
) -> None:
    error = to_provider_error(_openai_status_error(status, body), ErrorContext("OpenAI"))
    assert type(error) is RequestTooLargeError
    assert not error.retryable
    assert error.status == status
    assert "Waiting will not help" in error.message
    assert "compact the session" in error.message
    assert "higher tokens-per-minute limit" in error.message
    assert "Requested" in error.message  # the provider's own numbers are kept


def test_a_rate_limit_that_asks_for_less_than_the_limit_is_retried() -> None:
    body = {"error": {
        "message": "Rate limit reached for gpt-4.1 in organization org-abc on tokens per min "
        "(TPM): Limit 30000, Used 25000, Requested 9000. Please try again in 8.2s.",
        "type": "tokens", "code": "rate_limit_exceeded"}}
    error = to_provider_error(_openai_status_error(429, body), ErrorContext("OpenAI"))
    assert type(error) is RateLimitError
    assert error.retryable


def test_overflow_wordings_of_new_servers_are_context_overflows() -> None:
    kimi = {"error": {"message": "Invalid request: Your request exceeded model token limit: "
                      "262144 (requested: 269030)", "type": "invalid_request_error"}}
    error = to_provider_error(_openai_status_error(400, kimi), ErrorContext("Kimi"))
    assert type(error) is ContextOverflowError
    assert not error.retryable
