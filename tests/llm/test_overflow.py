
"""Overflow classification: every provider's wording, and never a rate limit."""

from __future__ import annotations

import re

import anthropic
import httpx2
import openai
import pytest

from agent_server.errors import ContextOverflowError, OverloadedError, RateLimitError
from agent_server.llm.messages import AssistantMessage, TextContent, Usage
from agent_server.llm.overflow import (
    NOT_OVERFLOW_WORDINGS,
    OVERFLOW_CODES,
    OVERFLOW_WORDINGS,
    TOO_LARGE_FOR_RATE_LIMIT_WORDINGS,
    TOOLS_UNSUPPORTED_WORDINGS,
    WRONG_ENDPOINT_WORDINGS,
    ErrorFacts,
    Wording,
    error_facts,
    facts_say_overflow,
    facts_say_too_large_for_rate_limit,
    facts_say_tools_unsupported,
    facts_say_wrong_endpoint,
    is_context_overflow,
    server_window,
)

OVERFLOWS = [
    # Anthropic
    "prompt is too long: 213462 tokens > 200000 maximum",
    '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 1048577 tokens > 1000000 maximum"}}',
    "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again",
    # OpenAI
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.",
    "Your input exceeds the context window of this model. Please adjust your input and try again.",
    "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 533603 tokens. Please reduce the length of the messages.",
    "Invalid 'messages[2].content': string too long. Expected a string with maximum length 10485760, but got a string with length 12000000 instead. (string_above_max_length)",
    # Azure OpenAI / DeepSeek / OpenRouter (OpenAI wording)
    "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (66000 in the messages, 4000 in the completion).",
    "This endpoint's maximum context length is 131072 tokens. However, you requested about 150000 tokens (145000 of text input, 5000 in the output). Please reduce the length of either one.",
    # vLLM
    "This model's maximum context length is 32768 tokens. However, you requested 33000 tokens (32000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
    "Input prompt (40000 tokens) is too long and exceeds limit of 32768",
    # llama.cpp server
    "the request exceeds the available context size, try increasing it",
    # Ollama
    "prompt too long; exceeded max context length by 1342 tokens",
    "the input length exceeds the context length",
    # LM Studio
    "Trying to keep the first 5012 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough.",
    # Bedrock
    "Input is too long for requested model.",
    "ValidationException: The model returned the following errors: prompt is too long: 205000 tokens > 200000 maximum",
    # Gemini
    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    # Mistral
    "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
    # Groq
    "Please reduce the length of the messages or completion.",
    # xAI
    "This model's maximum prompt length is 131072 but the request contains 140000 tokens.",
    # Cohere
    "too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 5000. Try using a shorter prompt",
    # GitHub Copilot
    "prompt token count of 130000 exceeds the limit of 128000",
    # LM Studio (newer)
    "The number of tokens to keep from the initial prompt is greater than the context length. Try to load the model with a larger context length, or provide a shorter input",
    # MiniMax
    "invalid params, context window exceeds limit (2013)",
    # Kimi (Moonshot)
    "Invalid request: Your request exceeded model token limit: 262144 (requested: 269030)",
    '{"error": {"message": "Invalid request: Your request exceeded model token limit: 262144 (requested: 313014)", "type": "invalid_request_error"}}',
    # Hugging Face TGI
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 1244 `inputs` tokens and 1000 `max_new_tokens`",
    "Input validation error: `inputs` must have less than 1024 tokens. Given: 1168",
    # SiliconFlow and other vLLM-based hosts
    "length of prompt_tokens (57535) must be less than max_seq_len (32768)",
    # An HTTP proxy in front of a server
    "413 Request Entity Too Large",
    # Generic proxies
    "context length exceeded",
    "context_length_exceeded",
    "model_context_window_exceeded",
]

NOT_OVERFLOWS = [
    "Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): Limit 30000, Used 25000, Requested 9000. Please try again in 8.2s.",
    "Request too large for model `llama-3.3-70b-versatile` in organization `org_1` service tier `on_demand` on tokens per minute (TPM): Limit 12000, Requested 20000, please reduce your message size and try again.",
    "This request would exceed the rate limit for your organization of 400,000 input tokens per minute.",
    "Too Many Requests",
    "429 Too Many Requests: too many tokens per minute",
    "Number of request tokens has exceeded your per-minute rate limit",
    "Overloaded",
    '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "You exceeded your current quota, please check your plan and billing details.",
    "Resource has been exhausted (e.g. check quota).",
    "The server had an error while processing your request. Sorry about that!",
    "Your credit balance is too low to access the Anthropic API.",
    "max_tokens: 300000 > 128000, which is the maximum allowed number of output tokens for claude-sonnet-5-5",
    "invalid x-api-key",
    "",
    # One request above the account's tokens per minute: a rate limit, not the window
    "Request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Requested 36278. The input or output tokens must be reduced in order to run successfully.",
    # Not the input: the output budget the request asked for
    "max_tokens must be less than or equal to 16384, the maximum value for max_tokens is less than the context_window for this model",
]


@pytest.mark.parametrize("text", OVERFLOWS)
def test_overflow_wordings(text: str) -> None:
    assert is_context_overflow(text)


@pytest.mark.parametrize("text", NOT_OVERFLOWS)
def test_not_overflow_wordings(text: str) -> None:
    assert not is_context_overflow(text)


def test_the_table_is_large_enough() -> None:
    assert len(OVERFLOWS) + len(NOT_OVERFLOWS) >= 25
    assert len(NOT_OVERFLOWS) >= 10


def _response(status: int) -> httpx2.Response:
    return httpx2.Response(status, request=httpx2.Request("POST", "https://api.example/v1/x"))


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            anthropic.BadRequestError(
                "prompt is too long",
                response=_response(400),
                body={
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "prompt is too long: 300000 tokens > 200000 maximum",
                    },
                },
            ),
            True,
        ),
        (
            anthropic.ContentTooLargeError(
                "too large",
                response=_response(413),
                body={
                    "type": "error",
                    "error": {
                        "type": "request_too_large",
                        "message": "Request exceeds the maximum allowed number of bytes.",
                    },
                },
            ),
            True,
        ),
        (
            openai.BadRequestError(
                "bad",
                response=_response(400),
                body={
                    "message": "Your input exceeds the context window of this model.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                },
            ),
            True,
        ),
        (
            openai.RateLimitError(
                "rate",
                response=_response(429),
                body={
                    "message": "Rate limit reached on tokens per min (TPM)",
                    "type": "tokens",
                    "code": "rate_limit_exceeded",
                },
            ),
            False,
        ),
        (
            # A 429 is never an overflow, whatever it says.
            openai.RateLimitError(
                "rate", response=_response(429), body={"message": "context_length_exceeded?"}
            ),
            False,
        ),
        (
            anthropic.OverloadedError(
                "overloaded",
                response=_response(529),
                body={
                    "type": "error",
                    "error": {"type": "overloaded_error", "message": "Overloaded"},
                },
            ),
            False,
        ),
    ],
)
def test_sdk_exceptions(error: Exception, expected: bool) -> None:
    assert is_context_overflow(error) is expected


def test_provider_errors() -> None:
    assert is_context_overflow(ContextOverflowError("too long"))
    assert not is_context_overflow(RateLimitError("slow down", status=429))
    assert not is_context_overflow(OverloadedError("busy", status=529))
    assert is_context_overflow(RateLimitError("prompt is too long", status=400)) is True


def test_assistant_messages() -> None:
    truncated = AssistantMessage((TextContent("half"),), "contextOverflow")
    failed = AssistantMessage((), "error", error_message="prompt is too long: 5 tokens > 4 maximum")
    limited = AssistantMessage((), "error", error_message="429 Too Many Requests")
    fine = AssistantMessage(
        (TextContent("ok"),), "stop", usage=Usage(input=1000, cache_read=30_000, output=10)
    )
    assert is_context_overflow(truncated)
    assert is_context_overflow(failed)
    assert not is_context_overflow(limited)
    assert not is_context_overflow(fine)
    assert not is_context_overflow(fine, context_window=32_768)
    # A silent overflow: the server took more than the window and said nothing.
    assert is_context_overflow(fine, context_window=30_000)
    assert not is_context_overflow(AssistantMessage((TextContent("x"),), "length"), 10)


@pytest.mark.parametrize("row", OVERFLOW_WORDINGS, ids=lambda row: row.pattern[:40])
def test_every_overflow_row_recognises_its_example_and_says_where_it_was_seen(
    row: Wording,
) -> None:
    assert row.seen.strip()
    assert re.search(row.pattern, row.example, re.IGNORECASE)
    assert is_context_overflow(row.example)
    assert not facts_say_too_large_for_rate_limit(ErrorFacts(400, frozenset(), row.example))


@pytest.mark.parametrize("row", NOT_OVERFLOW_WORDINGS, ids=lambda row: row.pattern[:40])
def test_every_rate_limit_row_recognises_its_example(row: Wording) -> None:
    assert row.seen.strip()
    assert re.search(row.pattern, row.example, re.IGNORECASE)
    assert not is_context_overflow(row.example)


def test_the_too_large_rows_recognise_their_examples() -> None:
    for row in TOO_LARGE_FOR_RATE_LIMIT_WORDINGS:
        facts = ErrorFacts(429, frozenset(), row.example)
        assert facts_say_too_large_for_rate_limit(facts)
        assert not facts_say_overflow(facts)


@pytest.mark.parametrize("row", TOOLS_UNSUPPORTED_WORDINGS, ids=lambda row: row.pattern[:40])
def test_every_no_tools_row_recognises_its_example(row: Wording) -> None:
    assert row.seen.strip()
    facts = ErrorFacts(400, frozenset(), row.example)
    assert facts_say_tools_unsupported(facts)
    assert not facts_say_overflow(facts)


@pytest.mark.parametrize("row", WRONG_ENDPOINT_WORDINGS, ids=lambda row: row.pattern[:40])
def test_every_wrong_endpoint_row_recognises_its_example(row: Wording) -> None:
    assert row.seen.strip()
    assert facts_say_wrong_endpoint(ErrorFacts(200, frozenset(), row.example))
    assert not facts_say_overflow(ErrorFacts(200, frozenset(), row.example))


def test_a_404_naming_a_model_is_an_unknown_model_not_a_wrong_endpoint() -> None:
    assert facts_say_wrong_endpoint(ErrorFacts(404, frozenset(), "404 page not found"))
    unknown = 'model "qwen3:8b" not found, try pulling it first'
    assert not facts_say_wrong_endpoint(ErrorFacts(404, frozenset(), unknown))


def test_every_overflow_example_is_a_row_or_a_code_of_the_table() -> None:
    for text in OVERFLOWS:
        by_row = any(re.search(row.pattern, text, re.IGNORECASE) for row in OVERFLOW_WORDINGS)
        by_code = any(code in text for code in OVERFLOW_CODES)
        assert by_row or by_code, text


@pytest.mark.parametrize(
    ("status", "empty", "expected"),
    [
        (400, True, True),
        (413, True, True),
        (400, False, False),  # a bare 400 that said something else: not read as an overflow
        (429, True, False),
        (500, True, False),
        (404, True, False),
    ],
)
def test_an_error_with_no_body(status: int, empty: bool, expected: bool) -> None:
    text = f"Error code: {status}" if empty else f"Error code: {status} - bad role"
    assert facts_say_overflow(ErrorFacts(status, frozenset(), text, empty_body=empty)) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Requested 36278. The input or output tokens must be reduced in order to run successfully.", True),
        ("Request too large for model `moonshotai/kimi-k2-instruct` in organization `org_01` service tier `on_demand` on tokens per minute (TPM): Limit 10000, Requested 21247, please reduce your message size and try again. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing", True),
        ("Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): Limit 30000, Used 25000, Requested 9000. Please try again in 8.2s.", False),
        ("Rate limit reached for o3 on tokens per min (TPM): Limit 30,000, Used 1,000, Requested 32,145.", True),
        ("This request would exceed the rate limit for your organization of 20,000 input tokens per minute. Please reduce the prompt length or the maximum tokens requested, or try again later.", False),
        ("Invalid request: Your request exceeded model token limit: 262144 (requested: 269030)", False),
        ("Rate limit reached for requests. Please try again in 1s.", False),
    ],
)
def test_too_large_for_the_rate_limit(text: str, expected: bool) -> None:
    assert facts_say_too_large_for_rate_limit(ErrorFacts(429, frozenset(), text)) is expected


def test_the_window_a_server_states_is_read_from_its_wording_and_llama_cpps_body() -> None:
    stated = [w for w in OVERFLOW_WORDINGS if "(?P<limit>" in w.pattern]
    assert len(stated) >= 6
    for wording in stated:
        window = server_window(error_facts(wording.example))
        assert window is not None and str(window) in wording.example.replace(",", "")
    llama = {"error": {"code": 400, "type": "exceed_context_size_error", "n_ctx": 4096,
                       "message": "the request exceeds the available context size, try "
                                  "increasing it", "n_prompt_tokens": 5000}}
    assert server_window(error_facts(llama)) == 4096
    assert server_window(error_facts("prompt too long; exceeded max context length by 12")) is None


def test_a_wording_whose_number_is_left_out_is_still_an_overflow() -> None:
    for text in ("length of prompt_tokens (57535) must be less than max_seq_len",
                 "Input validation error: `inputs` tokens + `max_new_tokens` must be <="):
        assert is_context_overflow(text), text
        assert server_window(ErrorFacts(400, frozenset(), text)) is None
