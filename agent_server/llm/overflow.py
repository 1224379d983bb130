"""Is this failure a context overflow? One answer for every provider's wording.

An overflow (the prompt does not fit the model's window) is recovered by compacting once and
retrying once; a rate limit or an overload is retried with backoff. Taking one for the other
either loops or throws away history for nothing, so the classification is strict in both
directions: error codes first, then rate-limit and overload wording (never an overflow), then
the overflow phrasings of the major providers and local servers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agent_server.errors import ContextOverflowError, ProviderError
from agent_server.llm.messages import AssistantMessage

# Error codes and types that mean "the prompt is too large for this model".
OVERFLOW_CODES: frozenset[str] = frozenset(
    {
        "context_length_exceeded",  # OpenAI, Azure, Groq, DeepSeek, OpenRouter
        "model_context_window_exceeded",  # Anthropic (stop reason and error)
        "context_window_exceeded",
        "request_too_large",  # Anthropic 413: the request body is too large
        "string_above_max_length",  # OpenAI: one input string is too long
        "exceed_context_size_error",  # llama.cpp server
        "prompt_too_long",
        "input_too_long",
        "token_limit_exceeded",
        "context_too_long",
    }
)

# Codes and types that mean "try later" or "not allowed": never an overflow.
NOT_OVERFLOW_CODES: frozenset[str] = frozenset(
    {
        "rate_limit_error",
        "rate_limit_exceeded",
        "rate_limited",
        "tokens_per_minute_exceeded",
        "requests_per_minute_exceeded",
        "insufficient_quota",
        "quota_exceeded",
        "resource_exhausted",
        "overloaded_error",
        "overloaded",
        "server_overloaded",
        "service_unavailable",
        "throttlingexception",
        "too_many_requests",
        "billing_error",
    }
)

_NOT_OVERFLOW_TEXT = re.compile(
    r"rate[ _-]?limit"
    r"|too many requests"
    r"|\bper (min|minute|hour|day)\b"
    r"|\b(tpm|rpm|tpd|rpd|itpm|otpm)\b"
    r"|tokens per (min|minute|second|hour|day)"
    r"|quota"
    r"|overloaded"
    r"|over capacity"
    r"|throttl"
    r"|try again (later|in)"
    r"|credit balance"
    r"|billing",
    re.IGNORECASE,
)

_OVERFLOW_TEXT = re.compile(
    "|".join(
        (
            # Anthropic, Bedrock: "prompt is too long: 213462 tokens > 200000 maximum"
            r"prompt is too long",
            r"prompt too long",
            # OpenAI Responses: "Your input exceeds the context window of this model."
            r"exceeds? (the |this |your )?(model'?s? )?(maximum )?context (window|length|size)",
            # OpenAI, vLLM, DeepSeek, OpenRouter: "This model's maximum context length is N
            # tokens. However, your messages resulted in M tokens."
            r"maximum context length (is|of) \d+",
            r"maximum prompt length is \d+",  # xAI
            r"context length exceeded",
            r"context window exceeded",
            r"exceeds the available context size",  # llama.cpp server
            r"exceed(s|ed)? (the )?(max(imum)? )?context",
            r"exceeded max context length",  # Ollama runner
            r"input is too long for (the )?requested model",  # Bedrock
            r"input (is )?too long",
            r"too many (input |prompt )?tokens",  # Cohere, Together, generic
            r"input tokens exceed the configured limit",  # OpenAI per-model input cap
            r"input token count.{0,40}exceeds the maximum",  # Gemini
            r"too large for model with \d+ maximum context length",  # Mistral
            r"(prompt|request|input).{0,60}\btoo large for (the )?model",
            r"reduce the length of the messages",  # OpenAI, Groq, vLLM advice
            r"context length of only \d+",  # LM Studio
            r"longer than the model'?s context length",
            r"prompt token count of \d+ exceeds the limit",  # GitHub Copilot
            r"input length .{0,40}exceeds? .{0,40}context length",  # Ollama
            r"is too long and exceeds limit of \d+",  # vLLM: "Input prompt (N tokens) is too ..."
            r"request too large",
        )
    ),
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ErrorFacts:
    """What can be read off a failure: HTTP status, codes and types, and its wording."""

    status: int | None
    codes: frozenset[str]
    text: str


def is_context_overflow(error_or_message: object, context_window: int | None = None) -> bool:
    """True when `error_or_message` says the prompt did not fit the model's context window.

    Accepts a ProviderError, an SDK exception (Anthropic or OpenAI), an AssistantMessage (stop
    reason `contextOverflow`, an `error` with its message, or a silent overflow: usage whose
    prompt is above `context_window`), or a plain error string. Rate limits ("429", "too many
    requests", "rate limit ... tokens per minute"), overloads and quota errors are never
    overflows.
    """
    if isinstance(error_or_message, ContextOverflowError):
        return True
    if isinstance(error_or_message, AssistantMessage):
        return _assistant_overflow(error_or_message, context_window)
    return facts_say_overflow(error_facts(error_or_message))


def facts_say_overflow(facts: ErrorFacts) -> bool:
    if facts.status == 429:
        return False
    codes = {code.lower() for code in facts.codes}
    if codes & NOT_OVERFLOW_CODES:
        return False
    if _NOT_OVERFLOW_TEXT.search(facts.text):
        return False
    if codes & OVERFLOW_CODES:
        return True
    text = facts.text.lower()
    # A code quoted in a message ("... (context_length_exceeded)") counts as the code.
    if any(code in text for code in OVERFLOW_CODES):
        return True
    return bool(_OVERFLOW_TEXT.search(facts.text))


def _assistant_overflow(message: AssistantMessage, context_window: int | None) -> bool:
    if message.stop_reason == "contextOverflow":
        return True
    if (
        message.stop_reason == "error"
        and message.error_message
        and facts_say_overflow(error_facts(message.error_message))
    ):
        return True
    usage = message.usage
    # A silent overflow: some servers (llama.cpp, Ollama) truncate the prompt instead of
    # failing, and some report a prompt larger than the window they accepted.
    return (
        context_window is not None
        and usage is not None
        and usage.input + usage.cache_read + usage.cache_write > context_window
    )


def error_facts(error: object) -> ErrorFacts:
    """Status, codes and text of an error of any shape (ours, an SDK's, httpx's, a string)."""
    if isinstance(error, str):
        return ErrorFacts(None, frozenset(), error)
    codes: set[str] = set()
    texts: list[str] = []
    status: int | None = None
    if isinstance(error, ProviderError):
        status = error.status
        if error.error_type:
            codes.add(error.error_type)
        texts.append(error.message)
    elif isinstance(error, BaseException):
        raw_status = getattr(error, "status_code", None)
        status = raw_status if isinstance(raw_status, int) else None
        for attribute in ("code", "type", "error_code"):
            value = getattr(error, attribute, None)
            if isinstance(value, str):
                codes.add(value)
        message = getattr(error, "message", None)
        texts.append(message if isinstance(message, str) else str(error))
        _collect(getattr(error, "body", None), codes, texts, depth=0)
    elif isinstance(error, Mapping):
        _collect(error, codes, texts, depth=0)
    else:
        texts.append(str(error))
    return ErrorFacts(status, frozenset(codes), "\n".join(texts))


def _collect(body: object, codes: set[str], texts: list[str], depth: int) -> None:
    """Codes and messages from a JSON error body, at any nesting the providers use."""
    if depth > 4:
        return
    if isinstance(body, str):
        texts.append(body)
    elif isinstance(body, Mapping):
        for key, value in body.items():
            if key in ("code", "type", "error_code", "status") and isinstance(value, str):
                codes.add(value)
            elif key in ("message", "detail", "error") and isinstance(value, str):
                texts.append(value)
            elif isinstance(value, Mapping | list):
                _collect(value, codes, texts, depth + 1)
    elif isinstance(body, list):
        for item in _limited(body):
            _collect(item, codes, texts, depth + 1)


def _limited(items: Iterable[object], limit: int = 8) -> Iterable[object]:
    for index, item in enumerate(items):
        if index >= limit:
            return
        yield item
