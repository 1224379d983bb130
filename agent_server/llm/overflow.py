"""Is this failure a context overflow? One table of every provider's wording, consulted once.

An overflow (the prompt does not fit the model's window) is recovered by compacting once and
retrying once; a rate limit or an overload is retried with backoff; a request larger than the
account's rate limit is neither (only a smaller request helps). Taking one for another either
loops, throws away history for nothing, or retries what can never succeed, so the
classification is strict: error codes first, then rate-limit and overload wording (never an
overflow), then the overflow wordings below.

The tables are the one place such wording lives: `provider_errors` consults them when it maps
a failure to an error class, and nothing classifies a second time. A new wording is a row
here, with where it was seen, and a case in `tests/llm/test_overflow.py`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agent_server.errors import ContextOverflowError, ProviderError
from agent_server.llm.messages import AssistantMessage


@dataclass(frozen=True, slots=True)
class Wording:
    """One way providers say something: a regular expression (matched case-insensitively,
    anywhere in the error text) and where it was seen, with an example."""

    pattern: str
    seen: str


# Error codes and types that mean "the prompt is too large for this model".
OVERFLOW_CODES: Mapping[str, str] = {
    "context_length_exceeded": "OpenAI, Azure, Groq, DeepSeek, OpenRouter (error code)",
    "model_context_window_exceeded": "Anthropic (stop reason and error type)",
    "context_window_exceeded": "proxies in front of Anthropic",
    # The body, not the token count, is too large; compacting shrinks it all the same.
    "request_too_large": "Anthropic 413: 'Request exceeds the maximum allowed number of bytes.'",
    "string_above_max_length": "OpenAI: one input string is longer than 10 MB",
    "exceed_context_size_error": "llama.cpp server (error type)",
    "prompt_too_long": "generic proxies",
    "input_too_long": "generic proxies",
    "token_limit_exceeded": "generic proxies",
    "context_too_long": "generic proxies",
}

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

# Rate limits, overloads, quota and billing: whatever else the text says, never an overflow.
NOT_OVERFLOW_WORDINGS: tuple[Wording, ...] = (
    Wording(r"rate[ _-]?limit", "OpenAI, Anthropic, Groq: 'Rate limit reached for ...'"),
    Wording(r"too many requests", "HTTP 429 reason phrase, every provider"),
    Wording(r"\bper (min|minute|hour|day)\b", "Anthropic: '... input tokens per minute'"),
    Wording(r"\b(tpm|rpm|tpd|rpd|itpm|otpm)\b", "OpenAI, Groq: 'on tokens per min (TPM)'"),
    Wording(r"tokens per (min|minute|second|hour|day)", "OpenAI, Groq, Cerebras"),
    Wording(r"quota", "OpenAI 'insufficient_quota', Gemini 'RESOURCE_EXHAUSTED (check quota)'"),
    Wording(r"overloaded", "Anthropic 529 'Overloaded', OpenAI 503"),
    Wording(r"over capacity", "Groq, Together"),
    Wording(r"throttl", "Bedrock 'ThrottlingException'"),
    Wording(r"try again (later|in)", "OpenAI: 'Please try again in 8.2s'"),
    Wording(r"credit balance", "Anthropic: 'Your credit balance is too low ...'"),
    Wording(r"billing", "OpenAI: '... check your plan and billing details'"),
)

OVERFLOW_WORDINGS: tuple[Wording, ...] = (
    Wording(r"prompt is too long", "Anthropic, Bedrock: 'prompt is too long: 213462 tokens > "
            "200000 maximum'"),
    Wording(r"prompt too long", "Ollama: 'prompt too long; exceeded max context length by N "
            "tokens'"),
    Wording(r"exceeds? (the |this |your )?(model'?s? )?(maximum )?context (window|length|size)",
            "OpenAI Responses: 'Your input exceeds the context window of this model.'"),
    Wording(r"maximum context length (is|of) \d+", "OpenAI, vLLM, DeepSeek, OpenRouter: "
            "'This model's maximum context length is N tokens. However, ...'"),
    Wording(r"maximum prompt length is \d+", "xAI: 'This model's maximum prompt length is "
            "131072 but the request contains N tokens.'"),
    Wording(r"context[_ ]length[_ ]exceeded", "generic proxies (pi-mono overflow.ts)"),
    Wording(r"context window exceeded", "generic proxies"),
    Wording(r"exceeds the available context size", "llama.cpp server: 'the request exceeds "
            "the available context size, try increasing it'"),
    Wording(r"exceed(s|ed)? (the )?(max(imum)? )?context", "Ollama runner, generic"),
    Wording(r"input is too long for (the )?requested model", "Bedrock: 'Input is too long for "
            "requested model.'"),
    Wording(r"input (is )?too long", "generic proxies"),
    Wording(r"too many (input |prompt )?tokens", "Cohere: 'too many tokens: total number of "
            "tokens in the prompt cannot exceed N'; Together"),
    Wording(r"input tokens exceed the configured limit", "OpenAI per-model input cap: 'Input "
            "tokens exceed the configured limit of 272000 tokens.'"),
    Wording(r"input token count.{0,40}exceeds the maximum", "Gemini: 'The input token count "
            "(1200000) exceeds the maximum number of tokens allowed (1048576).'"),
    Wording(r"too large for model with \d+ maximum context length", "Mistral: 'Prompt contains "
            "N tokens ... too large for model with 32768 maximum context length'"),
    Wording(r"(prompt|request|input).{0,60}\btoo large for (the )?model", "generic"),
    Wording(r"reduce the length of the messages", "OpenAI, Groq, vLLM: 'Please reduce the "
            "length of the messages or completion.'"),
    Wording(r"context length of only \d+", "LM Studio: '... the model is loaded with context "
            "length of only 4096 tokens, which is not enough.'"),
    Wording(r"greater than the context length", "LM Studio: 'The number of tokens to keep from "
            "the initial prompt is greater than the context length' (pi-mono overflow.ts)"),
    Wording(r"longer than the model'?s context length", "generic OpenAI-compatible servers"),
    Wording(r"prompt token count of \d+ exceeds the limit", "GitHub Copilot: 'prompt token "
            "count of 130000 exceeds the limit of 128000'"),
    Wording(r"input length .{0,40}exceeds? .{0,40}context length", "Ollama: 'the input length "
            "exceeds the context length'"),
    Wording(r"is too long and exceeds limit of \d+", "vLLM: 'Input prompt (N tokens) is too "
            "long and exceeds limit of 32768'"),
    Wording(r"context window exceeds limit", "MiniMax: 'invalid params, context window exceeds "
            "limit' (pi-mono overflow.ts)"),
    Wording(r"exceeded model token limit", "Kimi (Moonshot): 'Invalid request: Your request "
            "exceeded model token limit: 262144 (requested: 269030)' (MoonshotAI/kimi-cli#2011)"),
    Wording(r"`?inputs`? tokens \+ `?max_new_tokens`? must be <=", "Hugging Face TGI: 'Input "
            "validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 1244 "
            "`inputs` tokens and 1000 `max_new_tokens`' (text-generation-inference#628)"),
    Wording(r"`?inputs`? must have less than \d+ tokens", "Hugging Face TGI: 'Input validation "
            "error: `inputs` must have less than 1024 tokens. Given: 1168' "
            "(text-generation-inference#695)"),
    Wording(r"must be less than max_seq_len", "SiliconFlow and other vLLM-based hosts: 'length "
            "of prompt_tokens (57535) must be less than max_seq_len (32768)' "
            "(langgenius/dify#19394)"),
    Wording(r"token limit exceeded", "generic proxies (pi-mono overflow.ts)"),
    Wording(r"request too large", "generic; a TPM 'Request too large' is a rate limit (below)"),
    Wording(r"request entity too large|payload too large", "HTTP proxies (nginx) in front of a "
            "server: '413 Request Entity Too Large'; compacting shrinks the body"),
)

# Statuses that, with no body at all, are read as an overflow. Seen: Cerebras answers a prompt
# over the window with "400/413 status code (no body)" (pi-mono overflow.ts), and so do some
# other fast-inference hosts. It is ambiguous (a malformed request can get a bare 400 too), so
# it gets the reading whose recovery is cheap and bounded: an overflow costs one compaction and
# one retry, after which the error surfaces with its status; read as a bug, every overflow from
# those servers would end the turn with nothing the user could do.
EMPTY_BODY_OVERFLOW_STATUSES: frozenset[int] = frozenset({400, 413})

# One request larger than the account's per-minute budget: retrying never helps. Seen as
# OpenAI 429 "Request too large for gpt-4o in organization org-... on tokens per min (TPM):
# Limit 30000, Requested 36278. The input or output tokens must be reduced ..." (type `tokens`,
# code `rate_limit_exceeded`, Aider-AI/aider#1880) and Groq 413 "Request too large for model
# `moonshotai/kimi-k2-instruct` ... on tokens per minute (TPM): Limit 10000, Requested 21247,
# please reduce your message size and try again." (cline/cline#4971). An ordinary rate limit
# ("Rate limit reached ... Limit 30000, Used 25000, Requested 9000") asks for less than the
# limit: it is retried.
TOO_LARGE_FOR_RATE_LIMIT_CONTEXT: Wording = Wording(
    r"\b(tpm|itpm|tokens per min(ute)?)\b", "OpenAI, Groq: '... on tokens per min (TPM)'"
)
TOO_LARGE_FOR_RATE_LIMIT_WORDINGS: tuple[Wording, ...] = (
    Wording(r"request too large for", "OpenAI 429, Groq 413: 'Request too large for MODEL ...'"),
)
_LIMIT_AND_REQUESTED = re.compile(
    r"\blimit:?\s*(?P<limit>\d[\d,]*).{0,40}?\brequested:?\s*(?P<requested>\d[\d,]*)",
    re.IGNORECASE,
)


def _compile(wordings: Iterable[Wording]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{w.pattern})" for w in wordings), re.IGNORECASE)


_NOT_OVERFLOW_TEXT = _compile(NOT_OVERFLOW_WORDINGS)
_OVERFLOW_TEXT = _compile(OVERFLOW_WORDINGS)
_RATE_LIMIT_CONTEXT = _compile((TOO_LARGE_FOR_RATE_LIMIT_CONTEXT,))
_TOO_LARGE_TEXT = _compile(TOO_LARGE_FOR_RATE_LIMIT_WORDINGS)


@dataclass(frozen=True, slots=True)
class ErrorFacts:
    """What can be read off a failure: HTTP status, codes and types, and its wording.

    `empty_body` is true for an HTTP error that came with no body at all.
    """

    status: int | None
    codes: frozenset[str]
    text: str
    empty_body: bool = False


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
    if codes & OVERFLOW_CODES.keys():
        return True
    if facts.empty_body and facts.status in EMPTY_BODY_OVERFLOW_STATUSES:
        return True
    text = facts.text.lower()
    # A code quoted in a message ("... (context_length_exceeded)") counts as the code.
    if any(code in text for code in OVERFLOW_CODES):
        return True
    return bool(_OVERFLOW_TEXT.search(facts.text))


def facts_say_too_large_for_rate_limit(facts: ErrorFacts) -> bool:
    """One request asks for more tokens per minute than the account may use at all."""
    if not _RATE_LIMIT_CONTEXT.search(facts.text):
        return False
    if _TOO_LARGE_TEXT.search(facts.text):
        return True
    numbers = _LIMIT_AND_REQUESTED.search(facts.text)
    if numbers is None:
        return False
    limit = int(numbers["limit"].replace(",", ""))
    requested = int(numbers["requested"].replace(",", ""))
    return requested > limit


def silent_overflow(message: AssistantMessage, context_window: int) -> bool:
    """An answer whose reported prompt is larger than the window: the server took more than
    the model can see (some OpenAI-compatible hosts accept it and cut the prompt silently)."""
    usage = message.usage
    return usage is not None and usage.prompt_tokens > context_window


def _assistant_overflow(message: AssistantMessage, context_window: int | None) -> bool:
    if message.stop_reason == "contextOverflow":
        return True
    if (
        message.stop_reason == "error"
        and message.error_message
        and facts_say_overflow(error_facts(message.error_message))
    ):
        return True
    return context_window is not None and silent_overflow(message, context_window)


def error_facts(error: object) -> ErrorFacts:
    """Status, codes and text of an error of any shape (ours, an SDK's, httpx's, a string)."""
    if isinstance(error, str):
        return ErrorFacts(None, frozenset(), error)
    codes: set[str] = set()
    texts: list[str] = []
    status: int | None = None
    empty_body = False
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
        body = getattr(error, "body", None)
        # The SDKs keep the body's text when it is not JSON, and "" when there was none.
        blank = body is None or (isinstance(body, str) and not body.strip())
        empty_body = status is not None and blank
        _collect(body, codes, texts, depth=0)
    elif isinstance(error, Mapping):
        _collect(error, codes, texts, depth=0)
    else:
        texts.append(str(error))
    return ErrorFacts(status, frozenset(codes), "\n".join(texts), empty_body)


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
