
"""Provider stream shapes the simulator does not produce (signed and redacted thinking,
refusals, local servers without usage, failed responses), replayed through the real SDKs
over an in-memory HTTP transport."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx2
import pytest

from agent_server.errors import (
    ContextOverflowError,
    InvalidRequestError,
    OverloadedError,
    ProviderConnectionError,
    ProviderServerError,
)
from agent_server.llm.anthropic import AnthropicProvider
from agent_server.llm.messages import AssistantMessage, Context, ThinkingContent, ToolCall
from agent_server.llm.models import ModelInfo, ModelRegistry
from agent_server.llm.openai_chat import OpenAIChatProvider
from agent_server.llm.openai_responses import OpenAIResponsesProvider
from agent_server.llm.stream import (
    CallOptions,
    MessageAssembler,
    MessageDone,
    Provider,
    StreamEvent,
    ThinkingSignature,
)
from tests.llm.builders import user

MODEL = ModelRegistry().require("sim-large")
LOCAL = ModelInfo("llama", "llama", "local", 8192, 1024, base_url="http://local/v1")
CONTEXT = Context("system", (), (user("hi"),))


def sse(events: Sequence[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append(f"{head}data: {payload}\n\n")
    return "".join(out).encode()


def transport(body: bytes, status: int = 200) -> httpx2.AsyncClient:
    def handler(request: httpx2.Request) -> httpx2.Response:
        kind = "text/event-stream" if status == 200 else "application/json"
        return httpx2.Response(status, headers={"content-type": kind}, content=body)

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


class _BrokenStream(httpx2.AsyncByteStream):
    """A body that stops mid-way with the transport error a cut connection gives."""

    def __init__(self, head: bytes) -> None:
        self._head = head

    async def __aiter__(self) -> Any:
        yield self._head
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete body")


def broken_transport(head: bytes) -> httpx2.AsyncClient:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_BrokenStream(head)
        )

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


async def run(provider: Provider, model: ModelInfo = MODEL) -> tuple[list[StreamEvent], AssistantMessage]:
    events = [event async for event in provider.stream(model, CONTEXT, CallOptions())]
    done = events[-1]
    assert isinstance(done, MessageDone)
    # What the assembler rebuilds from the events is the final message's content.
    assembler = MessageAssembler()
    for event in events:
        assembler.apply(event)
    assert assembler.content() == done.message.content
    return events, done.message


def anthropic_events(blocks: list[tuple[str, Any]], stop_reason: str) -> bytes:
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "model": "sim-large", "content": [], "usage": usage}}),
    ]
    for index, (kind, payload) in enumerate(blocks):
        if kind == "thinking":
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": payload[0]}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": payload[1]}}))
        elif kind == "redacted":
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "redacted_thinking", "data": payload}}))
        elif kind == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": payload}}))
        elif kind == "tool":
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": payload[0], "name": "read", "input": {}}}))
            for fragment in payload[1]:
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": fragment}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 42}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events)


async def test_anthropic_signed_and_redacted_thinking_and_tool_arguments() -> None:
    body = anthropic_events(
        [
            ("thinking", ("first thought", "sig-1")),
            ("redacted", "ENCRYPTED"),
            ("thinking", ("second thought", "sig-2")),
            ("text", "Reading."),
            ("tool", ("toolu_1", ['{"path": "b.py", ', '"offset": 3, "a": {"z": 1, "y": 2}}'])),
        ],
        "tool_use",
    )
    provider = AnthropicProvider("k", "http://anthropic.test", http_client=transport(body))
    events, message = await run(provider)
    await provider.aclose()
    assert message.content == (
        ThinkingContent("first thought", signature="sig-1"),
        ThinkingContent("", signature="ENCRYPTED", redacted=True),
        ThinkingContent("second thought", signature="sig-2"),
        *message.content[3:4],
        ToolCall("toolu_1", "read", {"a": {"y": 2, "z": 1}, "offset": 3, "path": "b.py"}),
    )
    assert list(message.tool_calls[0].arguments) == ["a", "offset", "path"]
    assert message.stop_reason == "toolUse"
    assert message.usage is not None
    assert (message.usage.input, message.usage.output) == (10, 42)
    assert ThinkingSignature("ENCRYPTED", redacted=True) in events


@pytest.mark.parametrize(
    ("anthropic_reason", "stop_reason"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "pauseTurn"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "contextOverflow"),
        ("refusal", "refusal"),
    ],
)
async def test_anthropic_stop_reasons(anthropic_reason: str, stop_reason: str) -> None:
    body = anthropic_events([("text", "x")], anthropic_reason)
    provider = AnthropicProvider("k", "http://anthropic.test", http_client=transport(body))
    _, message = await run(provider)
    await provider.aclose()
    assert message.stop_reason == stop_reason


@pytest.mark.parametrize("sdk_helper", [True, False], ids=["sdk helper", "without it"])
async def test_anthropic_error_event_mid_stream(
    sdk_helper: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Raised as the SDK's stream raises it, through the client's private
    `_make_status_error`; an SDK without that name still gives a classified error (before:
    an AttributeError, "likely a bug in agent-server")."""
    import anthropic

    if not sdk_helper:
        owner = next(k for k in anthropic.AsyncAnthropic.__mro__ if "_make_status_error" in vars(k))
        monkeypatch.delattr(owner, "_make_status_error")
    body = anthropic_events([("text", "x")], "end_turn").split(b"event: message_delta")[0] + sse(
        [("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})]
    )
    provider = AnthropicProvider("k", "http://anthropic.test", http_client=transport(body))
    with pytest.raises(OverloadedError):
        await run(provider)
    await provider.aclose()


async def test_anthropic_stream_without_message_stop_is_a_dropped_connection() -> None:
    body = anthropic_events([("text", "x")], "end_turn").split(b"event: message_stop")[0]
    provider = AnthropicProvider("k", "http://anthropic.test", http_client=transport(body))
    with pytest.raises(ProviderConnectionError, match="dropped"):
        await run(provider)
    await provider.aclose()


def chat_chunks(deltas: list[dict[str, Any]], finish: str | None, usage: dict[str, Any] | None) -> bytes:
    events: list[tuple[str | None, Any]] = []
    for delta in deltas:
        events.append((None, {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}))
    if finish is not None:
        events.append((None, {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    if usage is not None:
        events.append((None, {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return sse(events)


async def test_chat_from_a_local_server_with_reasoning_and_no_usage() -> None:
    body = chat_chunks(
        [
            {"role": "assistant", "reasoning_content": "thinking..."},
            {"content": "Let me read."},
            {"tool_calls": [{"index": 0, "function": {"name": "read", "arguments": '{"path"'}}]},
            {"tool_calls": [{"index": 0, "function": {"arguments": ': "a.py"}'}}]},
        ],
        "stop",  # some servers say stop after tool calls
        None,
    )
    provider = OpenAIChatProvider(None, "http://local/v1", http_client=transport(body))
    _, message = await run(provider, LOCAL)
    await provider.aclose()
    assert message.stop_reason == "toolUse"
    assert message.usage is None
    assert message.tool_calls == (ToolCall("call_0", "read", {"path": "a.py"}),)
    assert message.content[0] == ThinkingContent("thinking...")


@pytest.mark.parametrize(("finish", "stop_reason"), [("length", "length"), ("content_filter", "refusal"), ("stop", "stop")])
async def test_chat_finish_reasons_and_cached_usage(finish: str, stop_reason: str) -> None:
    usage = {"prompt_tokens": 5000, "completion_tokens": 20, "total_tokens": 5020, "prompt_tokens_details": {"cached_tokens": 4096}}
    body = chat_chunks([{"content": "x"}], finish, usage)
    provider = OpenAIChatProvider("k", "http://openai.test/v1", http_client=transport(body))
    _, message = await run(provider, ModelRegistry().require("gpt-5.5"))
    await provider.aclose()
    assert message.stop_reason == stop_reason
    assert message.usage is not None
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == (904, 4096, 20)
    assert message.usage.cost.total == pytest.approx((904 * 5 + 4096 * 0.5 + 20 * 30) / 1e6)


async def test_chat_from_openai_without_the_usage_chunk_is_a_dropped_connection() -> None:
    body = chat_chunks([{"content": "x"}], "stop", None)
    provider = OpenAIChatProvider("k", "http://openai.test/v1", http_client=transport(body))
    with pytest.raises(ProviderConnectionError):
        await run(provider, ModelRegistry().require("gpt-5.5"))
    await provider.aclose()


def responses_events(final: tuple[str, dict[str, Any]]) -> bytes:
    return sse(
        [
            ("response.created", {"type": "response.created", "sequence_number": 0, "response": {"id": "r", "status": "in_progress"}}),
            ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 1, "item_id": "m", "output_index": 0, "content_index": 0, "delta": "partial"}),
            (final[0], {"sequence_number": 2, **final[1]}),
        ]
    )


@pytest.mark.parametrize(("reason", "stop_reason"), [("max_output_tokens", "length"), ("content_filter", "refusal")])
async def test_responses_incomplete(reason: str, stop_reason: str) -> None:
    usage = {"input_tokens": 2000, "input_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 0}, "output_tokens": 16, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2016}
    body = responses_events(("response.incomplete", {"type": "response.incomplete", "response": {"id": "r", "status": "incomplete", "incomplete_details": {"reason": reason}, "usage": usage}}))
    provider = OpenAIResponsesProvider("k", "http://openai.test/v1", http_client=transport(body))
    _, message = await run(provider, ModelRegistry().require("gpt-5.5"))
    await provider.aclose()
    assert message.stop_reason == stop_reason
    assert message.usage is not None
    assert (message.usage.input, message.usage.cache_read) == (976, 1024)


async def test_responses_failed_with_overflow() -> None:
    body = responses_events(("response.failed", {"type": "response.failed", "response": {"id": "r", "status": "failed", "error": {"code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}}}))
    provider = OpenAIResponsesProvider("k", "http://openai.test/v1", http_client=transport(body))
    with pytest.raises(ContextOverflowError):
        await run(provider, ModelRegistry().require("gpt-5.5"))
    await provider.aclose()


# --- Chat Completions servers that never send finish_reason ----------------------------------


def chunk(delta: dict[str, Any], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """A chunk as the OpenRouter provider sent it: `finish_reason: null` every time."""
    choices = [{"index": 0, "delta": delta, "finish_reason": None}] if delta else []
    return {"id": "gen-1", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "provider": "SomeProvider", "choices": choices, "usage": usage}


OPENROUTER_TOOL_CALL = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"tool_calls": [{"index": 0, "id": "call_abc", "type": "function",
                           "function": {"name": "read", "arguments": ""}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": "READ'}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ME.md"}'}}]}),
    chunk({}, {"prompt_tokens": 900, "completion_tokens": 18, "total_tokens": 918}),
]


async def test_a_complete_tool_call_without_finish_reason_is_an_answer() -> None:
    body = sse([(None, item) for item in OPENROUTER_TOOL_CALL] + [(None, "[DONE]")])
    provider = OpenAIChatProvider(None, "http://router/v1", http_client=transport(body))
    _, message = await run(provider, LOCAL)
    await provider.aclose()
    assert message.stop_reason == "toolUse"
    assert message.tool_calls == (ToolCall("call_abc", "read", {"path": "README.md"}),)
    assert message.usage is not None
    assert (message.usage.input, message.usage.output) == (900, 18)


@pytest.mark.parametrize("done", [True, False], ids=["[DONE]", "clean end of body"])
async def test_text_without_finish_reason_or_usage_is_a_stop(done: bool) -> None:
    events: list[tuple[str | None, Any]] = [(None, chunk({"content": "All good."}))]
    if done:
        events.append((None, "[DONE]"))
    provider = OpenAIChatProvider(None, "http://local/v1", http_client=transport(sse(events)))
    _, message = await run(provider, LOCAL)
    await provider.aclose()
    assert message.stop_reason == "stop"
    assert message.text == "All good."
    assert message.usage is None


async def test_from_openai_the_usage_chunk_alone_closes_an_answer() -> None:
    usage = {"prompt_tokens": 2000, "completion_tokens": 5, "total_tokens": 2005}
    body = sse([(None, chunk({"content": "x"})), (None, chunk({}, usage)), (None, "[DONE]")])
    provider = OpenAIChatProvider("k", "http://openai.test/v1", http_client=transport(body))
    _, message = await run(provider, ModelRegistry().require("gpt-5.5"))
    await provider.aclose()
    assert message.stop_reason == "stop"


async def test_a_stream_with_nothing_in_it_is_a_dropped_connection() -> None:
    body = sse([(None, "[DONE]")])
    provider = OpenAIChatProvider(None, "http://local/v1", http_client=transport(body))
    with pytest.raises(ProviderConnectionError, match="dropped"):
        await run(provider, LOCAL)
    await provider.aclose()


async def test_a_connection_cut_mid_tool_call_is_retryable() -> None:
    head = sse([(None, item) for item in OPENROUTER_TOOL_CALL[:3]])
    provider = OpenAIChatProvider(None, "http://router/v1", http_client=broken_transport(head))
    with pytest.raises(ProviderConnectionError) as raised:
        await run(provider, LOCAL)
    await provider.aclose()
    assert raised.value.retryable


async def test_a_prompt_larger_than_the_window_taken_silently_is_an_overflow() -> None:
    usage = {"prompt_tokens": LOCAL.context_window + 500, "completion_tokens": 3,
             "total_tokens": LOCAL.context_window + 503}
    body = sse([(None, chunk({"content": "ok"})), (None, chunk({}, usage)), (None, "[DONE]")])
    provider = OpenAIChatProvider(None, "http://local/v1", http_client=transport(body))
    with pytest.raises(ContextOverflowError, match="more than the context window") as raised:
        await run(provider, LOCAL)
    await provider.aclose()
    assert str(LOCAL.context_window) in raised.value.message
    assert "contextWindow" in raised.value.message


# --- errors with no body ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (400, b"", ContextOverflowError),  # Cerebras: an overflow, said with no body
        (413, b"", ContextOverflowError),
        (400, b'{"error": {"message": "messages: bad role", "type": "invalid_request_error"}}',
         InvalidRequestError),
        (500, b"", ProviderServerError),
    ],
)
async def test_an_error_status_with_no_body(
    status: int, body: bytes, expected: type[Exception]
) -> None:
    provider = OpenAIChatProvider(None, "http://fast/v1", http_client=transport(body, status))
    with pytest.raises(expected) as raised:
        await run(provider, LOCAL)
    await provider.aclose()
    if expected is ContextOverflowError:
        assert f"{status} with no body" in str(raised.value)


async def test_anthropic_pause_turn_keeps_what_arrived() -> None:
    body = anthropic_events([("text", "Searching the web for that.")], "pause_turn")
    provider = AnthropicProvider("k", "http://anthropic.test", http_client=transport(body))
    _, message = await run(provider)
    await provider.aclose()
    assert message.stop_reason == "pauseTurn"
    assert message.text == "Searching the web for that."
