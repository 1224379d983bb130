"""Provider failures, mapped onto the one exception hierarchy (agent_server.errors).

Whatever the SDK or the network raised, the agent layer sees a ProviderError subclass whose
`retryable` flag says whether to try again, whose `retry_after` says when (from the
provider's retry-after header), and whose message says what went wrong and what to do. Keys
never appear in a message: every message passes through `redact`.

No SDK is imported here (each takes a second or more): an exception is matched against the
classes of the SDKs this process has already imported (`_imported`), since one that was
never imported raised nothing. A session on Anthropic never loads OpenAI's SDK, and code that
only reads sessions loads neither.
"""

from __future__ import annotations

import email.utils
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from agent_server.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    ModelNotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    ProviderServerError,
    QuotaExceededError,
    RateLimitError,
    RequestTooLargeError,
    redact,
)
from agent_server.llm.messages import AssistantMessage
from agent_server.llm.overflow import (
    ERROR_CODE_ATTRIBUTES,
    ErrorFacts,
    error_facts,
    facts_say_overflow,
    facts_say_too_large_for_rate_limit,
    facts_say_tools_unsupported,
    facts_say_wrong_endpoint,
    server_window,
)

_E = TypeVar("_E", bound=ProviderError)

# The modules whose exceptions are provider failures: the two SDKs and their HTTP client.
_SDKS = ("anthropic", "openai")
_HTTP = "httpx2"


def _imported(*names: str, modules: Sequence[str] = _SDKS) -> tuple[type[BaseException], ...]:
    """The exception classes `names` of each of `modules` already imported (a module not
    imported raised none of its exceptions)."""
    found = []
    for module_name in modules:
        module = sys.modules.get(module_name)
        for name in names:
            cls = getattr(module, name, None) if module is not None else None
            if isinstance(cls, type) and issubclass(cls, BaseException):
                found.append(cls)
    return tuple(found)


class StreamInterrupted(Exception):
    """The response stream ended before the provider's end-of-message event."""


@dataclass(frozen=True, slots=True)
class ErrorContext:
    """Who was called, for messages that say what to do."""

    provider: str  # display name: "Anthropic", "OpenAI", or the server's base URL
    api_key_env: str | None = None
    model: str = ""
    base_url: str | None = None
    secrets: Sequence[str] = ()


_QUOTA_CODES = frozenset({"insufficient_quota", "quota_exceeded", "billing_error"})
_RATE_LIMIT_CODES = frozenset({"rate_limit_error", "rate_limit_exceeded", "rate_limited"})
_OVERLOAD_CODES = frozenset({"overloaded_error", "overloaded", "server_overloaded"})
_SERVER_CODES = frozenset({"api_error", "server_error", "internal_error", "internal_server_error"})
_AUTH_CODES = frozenset({"authentication_error", "invalid_api_key", "unauthorized"})
_PERMISSION_CODES = frozenset({"permission_error", "permission_denied"})
_NOT_FOUND_CODES = frozenset({"not_found_error", "model_not_found"})
_STATUS_PAGES = {"Anthropic": "https://status.anthropic.com", "OpenAI": "https://status.openai.com"}


def to_provider_error(exc: BaseException, where: ErrorContext) -> ProviderError:
    """The ProviderError for `exc`, a failure of a provider call (see `is_provider_failure`)."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, _imported("APITimeoutError")):
        return _retryable(
            ProviderConnectionError,
            where,
            f"{where.provider} did not answer in time ({_detail(exc, where)}).",
            "The call will be retried; if this persists, check the network or the 'baseUrl' "
            "setting.",
            "Check the network connection and the 'baseUrl' setting, then try again; if they "
            f"are fine, check {_outage(where)} or switch to another model.",
        )
    if isinstance(
        exc,
        (
            *_imported("APIConnectionError"),
            *_imported("TransportError", modules=(_HTTP,)),
            StreamInterrupted,
        ),
    ):
        return _connection_error(exc, where)
    if isinstance(exc, _imported("APIError")):
        return _status_error(exc, where)
    return ProviderError(
        _say(where, f"{where.provider} call failed: {_detail(exc, where)}"),
        provider=where.provider,
    )


def is_provider_failure(exc: BaseException) -> bool:
    """Whether `exc` is a failure of the provider call (SDK, network, dropped stream)."""
    return isinstance(
        exc,
        (
            ProviderError,
            StreamInterrupted,
            *_imported("APIError"),
            *_imported("TransportError", "DecodingError", modules=(_HTTP,)),
        ),
    )


def retry_after_seconds(
    headers: Mapping[str, str] | None, now: float | None = None
) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


def error_from_body(
    body: Mapping[str, Any], where: ErrorContext, status: int | None = None
) -> ProviderError:
    """The ProviderError for an error reported inside a stream (an `error` event, a failed
    response): `body` is the provider's error object, e.g. {"type", "code", "message"}."""
    facts = error_facts(body)
    if status is not None:
        facts = replace(facts, status=status)
    message = _body_message_of(body) or facts.text
    detail = redact(" ".join(message.split())[:500], *where.secrets)
    error_type = next(
        (
            value
            for key in ("code", "type")
            if isinstance(value := body.get(key), str) and value and value != "error"
        ),
        None,
    )
    return _classify(facts, detail, None, error_type, where)


def silent_overflow_error(
    message: AssistantMessage, context_window: int, where: ErrorContext
) -> ContextOverflowError:
    """The error for an answer whose reported prompt is larger than the model's window."""
    prompt = message.usage.prompt_tokens if message.usage is not None else 0
    return ContextOverflowError(
        _say(
            where,
            f"{where.provider} took a prompt of {prompt} tokens, more than the context window "
            f"of {_model(where)} ({context_window} tokens): it may have cut the prompt without "
            "saying so. Compact the session (or start a new one) and try again; if the model's "
            "window is really larger, correct 'contextWindow' in the models file.",
        ),
        provider=where.provider,
    )


def _connection_error(exc: BaseException, where: ErrorContext) -> ProviderError:
    if _could_not_connect(exc) and not isinstance(exc, StreamInterrupted):
        # A server known by its URL ("the server at http://...") is not named twice.
        named = where.base_url is None or where.base_url in where.provider
        target = "" if named else f" at {where.base_url}"
        return _retryable(
            ProviderConnectionError,
            where,
            f"Could not reach {where.provider}{target} ({_detail(exc, where)}).",
            "Check the network connection and the 'baseUrl' setting; the call will be retried.",
            "Check the network connection and the 'baseUrl' setting (is the server running "
            "there?), then try again.",
        )
    if isinstance(exc, StreamInterrupted):
        happened = (
            f"The connection to {where.provider} dropped before the answer was complete ({exc})."
        )
    else:
        happened = (
            f"The connection to {where.provider} failed while answering ({_detail(exc, where)})."
        )
    return _retryable(
        ProviderConnectionError,
        where,
        happened,
        "The call will be retried.",
        f"Try again; if it keeps happening, check the network connection and {_outage(where)},"
        " or switch to another model.",
    )


def _retryable(
    cls: type[ProviderError],
    where: ErrorContext,
    happened: str,
    retrying: str,
    if_retries_fail: str,
    *,
    status: int | None = None,
    error_type: str | None = None,
    retry_after: float | None = None,
) -> ProviderError:
    """A failure that is retried: its message says so; once the retries are used up, the
    message says `happened` and `if_retries_fail` instead (ProviderError.retries_used_up)."""
    return cls(
        _say(where, f"{happened} {retrying}"),
        status=status,
        provider=where.provider,
        error_type=error_type,
        retry_after=retry_after,
        happened=_say(where, happened),
        if_retries_fail=_say(where, if_retries_fail),
    )


def _outage(where: ErrorContext) -> str:
    """Where to look for an outage of the provider ("check ...")."""
    page = _STATUS_PAGES.get(where.provider)
    return f"{where.provider}'s status page ({page})" if page else f"whether {where.provider} is up"


def _could_not_connect(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return False
        if isinstance(seen, _imported("ConnectError", "ConnectTimeout", modules=(_HTTP,))):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _status_error(exc: BaseException, where: ErrorContext) -> ProviderError:
    """An SDK's APIError (a status error, or an error the stream reported)."""
    facts = error_facts(exc)
    return _classify(
        facts,
        _detail(exc, where),
        retry_after_seconds(_headers(exc)),
        _error_type(exc, facts.codes),
        where,
    )


@dataclass(frozen=True, slots=True)
class _Failure:
    """One failed call, as the rules below read it: the facts the provider gave, the detail
    to quote, when to retry, the most specific error code, and who was called."""

    facts: ErrorFacts
    detail: str
    retry_after: float | None
    error_type: str | None
    where: ErrorContext

    @property
    def status(self) -> int | None:
        return self.facts.status

    @property
    def codes(self) -> set[str]:
        return {code.lower() for code in self.facts.codes}

    @property
    def provider(self) -> str:
        return self.where.provider

    def refused(self, cls: type[_E], text: str, wait: float | None = None) -> _E:
        """A failure that waiting will not fix."""
        return cls(
            _say(self.where, text),
            status=self.status,
            provider=self.provider,
            error_type=self.error_type,
            retry_after=wait,
        )

    def retried(
        self,
        cls: type[ProviderError],
        happened: str,
        retrying: str,
        if_retries_fail: str,
        wait: float | None = None,
    ) -> ProviderError:
        return _retryable(
            cls,
            self.where,
            happened,
            retrying,
            if_retries_fail,
            status=self.status,
            error_type=self.error_type,
            retry_after=wait,
        )


# The rules, tried in order; the first that recognises the failure classifies it.


def _out_of_quota(f: _Failure) -> ProviderError | None:
    # A quota or billing problem looks like a rate limit (429) but waiting will not fix it.
    lowered = f.facts.text.lower()
    if not (
        f.codes & _QUOTA_CODES
        or (f.status == 429 and "quota" in lowered)
        or "credit balance is too low" in lowered
    ):
        return None
    return f.refused(
        QuotaExceededError,
        f"{f.provider} refused the call: the account is out of quota or credit ({f.detail}). "
        f"Check the plan and billing of the account that owns the key{_in_variable(f.where)}.",
    )


def _too_large_for_rate_limit(f: _Failure) -> ProviderError | None:
    if not facts_say_too_large_for_rate_limit(f.facts):
        return None
    return f.refused(
        RequestTooLargeError,
        f"{f.provider} refused the request: it is larger than the account's rate limit "
        f"allows in one minute ({f.detail}). Waiting will not help: compact the session "
        "(or start a new one) to send a smaller request, or use a model or usage tier "
        "with a higher tokens-per-minute limit.",
    )


def _rate_limited(f: _Failure) -> ProviderError | None:
    if not (f.status == 429 or f.codes & _RATE_LIMIT_CODES):
        return None
    when = f" in {f.retry_after:g}s" if f.retry_after is not None else " with backoff"
    return f.retried(
        RateLimitError,
        f"{f.provider} rate limit reached ({f.detail}).",
        f"The call will be retried{when}.",
        "Wait a minute and try again; if it keeps happening, check the rate limits of the "
        f"account that owns the key{_in_variable(f.where)} (a higher usage tier raises them), "
        "or switch to another model.",
        f.retry_after,
    )


def _overloaded(f: _Failure) -> ProviderError | None:
    if not (f.status in (529, 503) or f.codes & _OVERLOAD_CODES):
        return None
    return f.retried(
        OverloadedError,
        f"{f.provider} is overloaded ({f.detail}).",
        "The call will be retried with backoff.",
        f"Try again in a few minutes, check {_outage(f.where)}, or switch to another model.",
        f.retry_after,
    )


def _overflow(f: _Failure) -> ProviderError | None:
    if not facts_say_overflow(f.facts):
        return None
    detail = f.detail
    if f.facts.empty_body:
        detail = (
            f"{f.status} with no body, which some servers, such as Cerebras, send for a "
            "prompt longer than the window"
        )
    error = f.refused(
        ContextOverflowError,
        f"The prompt does not fit the context window of {_model(f.where)} ({detail}). "
        "Compact the session (or start a new one) and try again.",
    )
    error.server_window = server_window(f.facts)
    return error


def _tools_unsupported(f: _Failure) -> ProviderError | None:
    if not facts_say_tools_unsupported(f.facts):
        return None
    return f.refused(
        InvalidRequestError,
        f"{f.provider} cannot give {_model(f.where)} tools ({f.detail}). agent-server works "
        "through tool calls: choose a model that supports them (Ollama: one whose page lists "
        "'tools'), or start the server with tool calling on (llama.cpp: --jinja; vLLM: "
        "--enable-auto-tool-choice --tool-call-parser with the model's parser).",
    )


def _wrong_endpoint(f: _Failure) -> ProviderError | None:
    if not facts_say_wrong_endpoint(f.facts):
        return None
    return f.refused(
        InvalidRequestError,
        f"{f.provider} has no such API endpoint ({f.detail}). Check the 'baseUrl' setting: "
        "OpenAI-compatible servers serve the API under /v1 (Ollama: "
        "http://localhost:11434/v1, LM Studio: http://localhost:1234/v1, llama.cpp: "
        "http://localhost:8080/v1, vLLM: http://localhost:8000/v1).",
    )


def _bad_key(f: _Failure) -> ProviderError | None:
    if not (f.status == 401 or f.codes & _AUTH_CODES):
        return None
    return f.refused(
        AuthenticationError,
        f"{f.provider} rejected the API key ({f.detail}). Check the key in "
        f"{_variable(f.where)}, or point the 'apiKeyEnv' setting at the variable that holds "
        "the right one.",
    )


def _not_allowed(f: _Failure) -> ProviderError | None:
    if not (f.status == 403 or f.codes & _PERMISSION_CODES):
        return None
    return f.refused(
        PermissionDeniedError,
        f"{f.provider} refused the call ({f.detail}). The key{_in_variable(f.where)} may not "
        f"use {_model(f.where)}: check its permissions, or choose another model.",
    )


def _unknown_model(f: _Failure) -> ProviderError | None:
    if not (f.status == 404 or f.codes & _NOT_FOUND_CODES):
        return None
    return f.refused(
        ModelNotFoundError,
        f"{f.provider} does not know {_model(f.where)} ({f.detail}). Check the 'model' "
        "setting (and 'baseUrl'): a local server's model goes by the id that server lists "
        "(Ollama: `ollama list`, and `ollama pull` one it lacks; others: GET <baseUrl>/models).",
    )


def _server_failed(f: _Failure) -> ProviderError | None:
    # A server-error code counts only without a 4xx status: Ollama types every error it
    # relays `api_error`, the 400s too, and retrying a 400 gets the same 400 again.
    client_error = f.status is not None and 400 <= f.status < 500
    server_code = bool(f.codes & _SERVER_CODES) and not client_error
    if not ((f.status is not None and f.status >= 500) or server_code):
        return None
    return f.retried(
        ProviderServerError,
        f"{f.provider} had an internal error ({f.detail}).",
        "The call will be retried.",
        f"Try again later, check {_outage(f.where)}, or switch to another model.",
        f.retry_after,
    )


def _invalid_request(f: _Failure) -> ProviderError | None:
    if not (f.status is not None and 400 <= f.status < 500):
        return None
    return f.refused(
        InvalidRequestError,
        f"{f.provider} rejected the request ({f.detail}). This is likely a bug in agent-server "
        "or a setting this model does not support; please report it.",
    )


_RULES: tuple[Callable[[_Failure], ProviderError | None], ...] = (
    _out_of_quota,
    _too_large_for_rate_limit,
    _rate_limited,
    _overloaded,
    _overflow,
    _tools_unsupported,
    _wrong_endpoint,
    _bad_key,
    _not_allowed,
    _unknown_model,
    _server_failed,
    _invalid_request,
)


def _classify(
    facts: ErrorFacts,
    detail: str,
    retry_after: float | None,
    error_type: str | None,
    where: ErrorContext,
) -> ProviderError:
    failure = _Failure(facts, detail, retry_after, error_type, where)
    for rule in _RULES:
        error = rule(failure)
        if error is not None:
            return error
    # An error event inside a stream that says nothing we recognise: treat as transient.
    return failure.retried(
        ProviderServerError,
        f"{where.provider} reported an error while answering ({detail}).",
        "The call will be retried.",
        f"Try again later, check {_outage(where)}, or switch to another model.",
    )


def _headers(exc: BaseException) -> Mapping[str, str] | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    return {str(key): str(value) for key, value in headers.items()}


def _detail(exc: BaseException, where: ErrorContext) -> str:
    """The provider's own words, trimmed, with anything key-shaped removed."""
    status = getattr(exc, "status_code", None)
    message = getattr(exc, "api_message", None) or _body_message(exc) or str(exc)
    message = " ".join(str(message).split())
    if len(message) > 500:
        message = message[:497] + "..."
    prefix = f"{status}: " if isinstance(status, int) and status >= 400 else ""
    return redact(
        f"{prefix}{message}" if message else f"{prefix}{type(exc).__name__}", *where.secrets
    )


def _body_message(exc: BaseException) -> str | None:
    return _body_message_of(getattr(exc, "body", None))


def _body_message_of(body: object) -> str | None:
    if isinstance(body, str):
        # A body that is not JSON ("404 page not found"); an HTML page says nothing useful.
        text = body.strip()
        return text if text and not text.startswith("<") else None
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            message = inner.get("message")
            if isinstance(message, str):
                return message
        elif isinstance(inner, str):
            return inner
        for key in ("message", "detail"):  # "detail": FastAPI servers (vLLM, LiteLLM)
            message = body.get(key)
            if isinstance(message, str):
                return message
        return _validation_errors(body)
    return None


def _validation_errors(body: Mapping[str, Any]) -> str | None:
    """Pydantic's validation errors (a FastAPI server's 422, Mistral's API), under `detail`,
    `message.detail` or `message`, as `body.field: msg` each; None when there are none."""
    message = body.get("message")
    nested = message.get("detail") if isinstance(message, Mapping) else None
    for entries in (body.get("detail"), nested, message):
        if not isinstance(entries, list):
            continue
        said = [
            ": ".join(filter(None, (".".join(map(str, entry.get("loc") or ())), entry["msg"])))
            for entry in entries
            if isinstance(entry, Mapping) and isinstance(entry.get("msg"), str)
        ]
        if said:
            return "; ".join(said)
    return None


def _say(where: ErrorContext, text: str) -> str:
    return redact(text, *where.secrets)


def _model(where: ErrorContext) -> str:
    return f"the model {where.model!r}" if where.model else "the model"


def _variable(where: ErrorContext) -> str:
    return f"the environment variable {where.api_key_env}" if where.api_key_env else "the API key"


def _in_variable(where: ErrorContext) -> str:
    return f" in {where.api_key_env}" if where.api_key_env else ""


def _error_type(exc: BaseException, codes: frozenset[str]) -> str | None:
    """The most specific code the provider gave: a stable error code, else the error type."""
    for attribute in ERROR_CODE_ATTRIBUTES:  # the most specific first
        value = getattr(exc, attribute, None)
        if isinstance(value, str) and value and value != "error":
            return value
    specific = sorted(code for code in codes if code != "error")
    return specific[0] if specific else None
