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

# The attributes an SDK error may name the provider's error code in, the most specific first.
ERROR_CODE_ATTRIBUTES = ("error_code", "code", "type")


@dataclass(frozen=True, slots=True)
class Wording:
    """One way providers say something: a regular expression (matched case-insensitively,
    anywhere in the error text), a message it was seen in, and who sends it and where that
    message was found. A pattern with a group named `limit` also reads the window the server
    says it has (`server_window`)."""

    pattern: str
    example: str
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
    Wording(r"rate[ _-]?limit",
            "Rate limit reached for requests. Please try again in 1s.",
            "OpenAI, Anthropic, Groq"),
    Wording(r"too many requests", "429 Too Many Requests", "HTTP reason phrase, every provider"),
    Wording(r"\bper (min|minute|hour|day)\b",
            "This request would exceed the rate limit for your organization of 20,000 input "
            "tokens per minute.",
            "Anthropic 429"),
    Wording(r"\b(tpm|rpm|tpd|rpd|itpm|otpm)\b",
            "Limit reached on TPM for this model",
            "OpenAI, Groq: '... on tokens per min (TPM)'"),
    Wording(r"tokens per (min|minute|second|hour|day)",
            "Too many tokens per minute for this key", "OpenAI, Groq, Cerebras"),
    Wording(r"quota", "You exceeded your current quota, please check your plan.",
            "OpenAI insufficient_quota; Gemini RESOURCE_EXHAUSTED"),
    Wording(r"overloaded", "Overloaded", "Anthropic 529, OpenAI 503"),
    Wording(r"over capacity", "The model is over capacity.", "Groq, Together"),
    Wording(r"throttl", "ThrottlingException: Too many tokens, please wait.", "Bedrock"),
    Wording(r"try again (later|in)", "Please try again in 8.2s.", "OpenAI"),
    Wording(r"credit balance",
            "Your credit balance is too low to access the Anthropic API.", "Anthropic"),
    Wording(r"billing", "Please check your plan and billing details.", "OpenAI"),
)

OVERFLOW_WORDINGS: tuple[Wording, ...] = (
    Wording(r"prompt is too long",
            "prompt is too long: 213462 tokens > 200000 maximum", "Anthropic, Bedrock"),
    Wording(r"prompt too long",
            "prompt too long; exceeded max context length by 1342 tokens", "Ollama"),
    Wording(r"exceeds? (the |this |your )?(model'?s? )?(maximum )?context (window|length|size)",
            "Your input exceeds the context window of this model. Please adjust your input and "
            "try again.",
            "OpenAI Responses"),
    Wording(r"maximum context length (is|of) (?P<limit>\d[\d,]*)",
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130412 tokens.",
            "OpenAI Chat Completions, vLLM, DeepSeek, OpenRouter"),
    Wording(r"maximum prompt length is (?P<limit>\d[\d,]*)",
            "This model's maximum prompt length is 131072 but the request contains 140000 "
            "tokens.",
            "xAI"),
    Wording(r"context[_ ]length[_ ]exceeded", "context length exceeded",
            "generic proxies (pi-mono packages/ai/src/utils/overflow.ts)"),
    Wording(r"context window exceeded", "context window exceeded", "generic proxies"),
    Wording(r"exceeds the available context size",
            "the request exceeds the available context size, try increasing it",
            "llama.cpp server"),
    Wording(r"exceed(s|ed)? (the )?(max(imum)? )?context",
            "exceeded max context length by 12 tokens", "Ollama runner, generic"),
    Wording(r"input is too long for (the )?requested model",
            "Input is too long for requested model.", "Bedrock"),
    Wording(r"input (is )?too long", "input too long for this endpoint", "generic proxies"),
    Wording(r"too many (input |prompt )?tokens",
            "too many tokens: total number of tokens in the prompt cannot exceed 4081 - "
            "received 5000",
            "Cohere, Together"),
    Wording(r"input tokens exceed the configured limit",
            "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted "
            "in 533603 tokens.",
            "OpenAI, a model's input cap"),
    Wording(r"input token count.{0,40}exceeds the maximum",
            "The input token count (1200000) exceeds the maximum number of tokens allowed "
            "(1048576).",
            "Gemini"),
    Wording(r"too large for model with (?P<limit>\d[\d,]*) maximum context length",
            "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 "
            "maximum context length",
            "Mistral"),
    Wording(r"(prompt|request|input).{0,60}\btoo large for (the )?model",
            "The prompt is too large for the model.", "generic"),
    Wording(r"reduce the length of the messages",
            "Please reduce the length of the messages or completion.", "OpenAI, Groq, vLLM"),
    Wording(r"context length of only (?P<limit>\d[\d,]*)",
            "the model is loaded with context length of only 4096 tokens, which is not enough.",
            "LM Studio (older)"),
    Wording(r"greater than the context length",
            "The number of tokens to keep from the initial prompt is greater than the context "
            "length.",
            "LM Studio (pi-mono packages/ai/src/utils/overflow.ts)"),
    Wording(r"longer than the model'?s context length",
            "The prompt is longer than the model's context length.",
            "generic OpenAI-compatible servers"),
    Wording(r"prompt token count of \d+ exceeds the limit",
            "prompt token count of 130000 exceeds the limit of 128000", "GitHub Copilot"),
    Wording(r"input length .{0,40}exceeds? .{0,40}context length",
            "the input length exceeds the context length", "Ollama"),
    Wording(r"is too long and exceeds limit of (?P<limit>\d[\d,]*)",
            "Input prompt (40000 tokens) is too long and exceeds limit of 32768", "vLLM"),
    Wording(r"context window exceeds limit",
            "invalid params, context window exceeds limit (2013)",
            "MiniMax (pi-mono packages/ai/src/utils/overflow.ts)"),
    Wording(r"exceeded model token limit",
            "Invalid request: Your request exceeded model token limit: 262144 (requested: "
            "269030)",
            "Kimi, Moonshot (MoonshotAI/kimi-cli#2011)"),
    Wording(r"`?inputs`? tokens \+ `?max_new_tokens`? must be <=(?: (?P<limit>\d[\d,]*))?",
            "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. "
            "Given: 1244 `inputs` tokens and 1000 `max_new_tokens`",
            "Hugging Face TGI (huggingface/text-generation-inference#628)"),
    Wording(r"`?inputs`? must have less than (?P<limit>\d[\d,]*) tokens",
            "Input validation error: `inputs` must have less than 1024 tokens. Given: 1168",
            "Hugging Face TGI (huggingface/text-generation-inference#695)"),
    Wording(r"must be less than max_seq_len(?: \((?P<limit>\d[\d,]*)\))?",
            "length of prompt_tokens (57535) must be less than max_seq_len (32768)",
            "SiliconFlow and other vLLM-based hosts (langgenius/dify#19394)"),
    Wording(r"token limit exceeded", "Token limit exceeded for this model.",
            "generic proxies (pi-mono packages/ai/src/utils/overflow.ts)"),
    Wording(r"request too large", "Request too large: 2300000 bytes",
            "generic; a TPM 'Request too large' is a rate limit (below)"),
    Wording(r"request entity too large|payload too large", "413 Request Entity Too Large",
            "HTTP proxies (nginx) in front of a server; compacting shrinks the body"),
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
    r"\b(tpm|itpm|tokens per min(ute)?)\b", "on tokens per min (TPM): Limit 6000", "OpenAI, Groq"
)
TOO_LARGE_FOR_RATE_LIMIT_WORDINGS: tuple[Wording, ...] = (
    Wording(r"request too large for",
            "Request too large for gpt-4o in organization org-abc on tokens per min (TPM): "
            "Limit 30000, Requested 36278.",
            "OpenAI 429 (Aider-AI/aider#1880), Groq 413 (cline/cline#4971)"),
)
# The model or the server cannot take the request's `tools`: waiting will not help, and
# agent-server works through tool calls, so the user has to choose another model or start the
# server with tool calling on. Said with any status (llama.cpp: 400, or 500 `server_error` in
# some builds; OpenRouter: 404), so this is read before the status is.
TOOLS_UNSUPPORTED_WORDINGS: tuple[Wording, ...] = (
    Wording(r"does not support tools",
            "registry.ollama.ai/library/gemma3:4b does not support tools",
            "Ollama 400, type api_error: a model whose template has no tools "
            "(ollama/ollama#5793, #14795)"),
    Wording(r"tools param requires --jinja",
            "tools param requires --jinja flag",
            "llama.cpp llama-server started without --jinja (400, or 500 in some builds)"),
    Wording(r"cannot use tools with stream",
            "Cannot use tools with stream",
            "llama.cpp llama-server builds before streamed tool calls"),
    Wording(r"tool choice requires --enable-auto-tool-choice",
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to '
            "be set",
            "vLLM started without tool calling (400 BadRequestError)"),
    Wording(r"no endpoints found that support tool use",
            "No endpoints found that support tool use.",
            "OpenRouter 404: none of the model's providers takes tools"),
)
# The 'baseUrl' leads to a server, but not to the API: most often a base URL without its
# `/v1`. Said as a 404 that names no model (a model the server does not know is named), or in
# the server's own words with any status.
WRONG_ENDPOINT_WORDINGS: tuple[Wording, ...] = (
    Wording(r"unexpected endpoint or method",
            "Unexpected endpoint or method. (POST /chat/completions)",
            "LM Studio, with status 200 (lmstudio-ai/lmstudio-bug-tracker#618)"),
)
_LIMIT_AND_REQUESTED = re.compile(
    r"\blimit:?\s*(?P<limit>\d[\d,]*).{0,40}?\brequested:?\s*(?P<requested>\d[\d,]*)",
    re.IGNORECASE,
)


def _compile(wordings: Iterable[Wording]) -> re.Pattern[str]:
    # One alternation: the `limit` groups, named in several rows, are read by _WINDOW_TEXTS.
    patterns = (w.pattern.replace("(?P<limit>", "(") for w in wordings)
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)


_NOT_OVERFLOW_TEXT = _compile(NOT_OVERFLOW_WORDINGS)
_OVERFLOW_TEXT = _compile(OVERFLOW_WORDINGS)
_RATE_LIMIT_CONTEXT = _compile((TOO_LARGE_FOR_RATE_LIMIT_CONTEXT,))
_TOO_LARGE_TEXT = _compile(TOO_LARGE_FOR_RATE_LIMIT_WORDINGS)
_TOOLS_UNSUPPORTED_TEXT = _compile(TOOLS_UNSUPPORTED_WORDINGS)
_WRONG_ENDPOINT_TEXT = _compile(WRONG_ENDPOINT_WORDINGS)
_WINDOW_TEXTS = tuple(
    re.compile(w.pattern, re.IGNORECASE) for w in OVERFLOW_WORDINGS if "(?P<limit>" in w.pattern
)
# The key of an error body that holds the server's window: llama.cpp's server answers
# `exceed_context_size_error` with {"n_prompt_tokens": 5000, "n_ctx": 4096, ...}.
WINDOW_BODY_KEY = "n_ctx"


@dataclass(frozen=True, slots=True)
class ErrorFacts:
    """What can be read off a failure: HTTP status, codes and types, and its wording.

    `empty_body` is true for an HTTP error that came with no body at all.
    """

    status: int | None
    codes: frozenset[str]
    text: str
    empty_body: bool = False
    window: int | None = None  # the server's window, when its body states it (llama.cpp)


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


def facts_say_tools_unsupported(facts: ErrorFacts) -> bool:
    """The model or the server cannot take the request's tools (TOOLS_UNSUPPORTED_WORDINGS)."""
    return bool(_TOOLS_UNSUPPORTED_TEXT.search(facts.text))


def facts_say_wrong_endpoint(facts: ErrorFacts) -> bool:
    """The base URL reaches a server but not the API (WRONG_ENDPOINT_WORDINGS): Ollama's
    "404 page not found", vLLM's {"detail": "Not Found"}, LM Studio's 200."""
    if _WRONG_ENDPOINT_TEXT.search(facts.text):
        return True
    return facts.status == 404 and "model" not in facts.text.lower()


def server_window(facts: ErrorFacts) -> int | None:
    """The context window an overflow error says the server has ("maximum context length is
    4096 tokens", llama.cpp's `n_ctx`), when it says one."""
    if facts.window is not None:
        return facts.window
    for pattern in _WINDOW_TEXTS:
        found = pattern.search(facts.text)
        if found is not None and found["limit"] is not None:  # some say no number
            return int(found["limit"].replace(",", ""))
    return None


def silent_overflow(message: AssistantMessage, context_window: int) -> bool:
    """An answer whose reported prompt is larger than the window: the server took more than
    the model can see (some OpenAI-compatible hosts accept it and cut the prompt silently)."""
    usage = message.usage
    return usage is not None and usage.prompt_tokens > context_window


# A local server read less than it was sent when it reports fewer prompt tokens than this
# share of the chars/4 floor of the request, and at least CUT_MARGIN fewer (chars/4 is a floor
# for every tokenizer and kind of text: context/estimate.py).
CUT_SHARE = 0.7
CUT_MARGIN = 1024


def cut_without_saying(prompt_tokens: int, floor: int) -> bool:
    """A server that reports `prompt_tokens` for a request of at least `floor` tokens has not
    read all of it: it cut the start of the prompt without an error (Ollama past `num_ctx`)."""
    return 0 < prompt_tokens < floor * CUT_SHARE and prompt_tokens <= floor - CUT_MARGIN


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
    windows: list[int] = []
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
        for attribute in ERROR_CODE_ATTRIBUTES:
            value = getattr(error, attribute, None)
            if isinstance(value, str):
                codes.add(value)
        message = getattr(error, "message", None)
        texts.append(message if isinstance(message, str) else str(error))
        body = getattr(error, "body", None)
        # The SDKs keep the body's text when it is not JSON, and "" when there was none.
        blank = body is None or (isinstance(body, str) and not body.strip())
        empty_body = status is not None and blank
        _collect(body, codes, texts, windows, depth=0)
    elif isinstance(error, Mapping):
        _collect(error, codes, texts, windows, depth=0)
    else:
        texts.append(str(error))
    window = windows[0] if windows else None
    return ErrorFacts(status, frozenset(codes), "\n".join(texts), empty_body, window)


def _collect(
    body: object, codes: set[str], texts: list[str], windows: list[int], depth: int
) -> None:
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
            elif key == WINDOW_BODY_KEY and isinstance(value, int) and value > 0:
                windows.append(value)
            elif isinstance(value, Mapping | list):
                _collect(value, codes, texts, windows, depth + 1)
    elif isinstance(body, list):
        for item in _limited(body):
            _collect(item, codes, texts, windows, depth + 1)


def _limited(items: Iterable[object], limit: int = 8) -> Iterable[object]:
    for index, item in enumerate(items):
        if index >= limit:
            return
        yield item
