"""A proxy or compatible server that ignores `stream: true` and answers with a whole JSON
body: the Anthropic Messages and OpenAI Responses providers, through the official SDKs,
against a server on a real socket (`wire_server`) that sends a whole `message` or `response`
(each checked against the SDK's own type), read as the stream it stands for. (The Chat
Completions case is in test_compatible_servers.py.)"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
from pydantic import TypeAdapter

from agent_server.errors import ProviderError
from agent_server.llm.anthropic import AnthropicProvider, _stream_of_message
from agent_server.llm.messages import AssistantMessage, Context, ThinkingContent
from agent_server.llm.models import ModelRegistry
from agent_server.llm.openai_responses import OpenAIResponsesProvider, _stream_of_response
from agent_server.llm.stream import CallOptions, MessageDone
from tests.llm.builders import SYSTEM, TOOLS, user
from tests.llm.wire_server import Answer, wire_server

CONTEXT = Context(SYSTEM, TOOLS, (user("Read README.md"),))
CLAUDE = ModelRegistry().require("claude-sonnet-4-6")
GPT = ModelRegistry().require("gpt-5.5")


async def answer_of(
    api: type[AnthropicProvider | OpenAIResponsesProvider], body: dict[str, Any]
) -> tuple[AssistantMessage, int]:
    """The message one streamed call through a provider of `api` makes of a server that sends
    `body` as JSON, and how many requests the server had."""
    async with wire_server(Answer(body=body)) as server:
        provider = api("key", server.base_url)
        model = CLAUDE if api is AnthropicProvider else GPT
        try:
            events = [event async for event in provider.stream(model, CONTEXT, CallOptions())]
        finally:
            await provider.aclose()
    done = events[-1]
    assert isinstance(done, MessageDone)
    return done.message, len(server.requests)


# --- Anthropic Messages: a whole `message` ------------------------------------------------------


def message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": CLAUDE.id,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 812, "output_tokens": 31,
                      "cache_read_input_tokens": 4096, "cache_creation_input_tokens": 0}}
    anthropic.types.Message.model_validate(body)  # the API's shape, as the SDK reads it
    return body


async def test_a_whole_anthropic_message_instead_of_a_stream_is_the_answer() -> None:
    body = message([
        {"type": "thinking", "thinking": "Two files.", "signature": "sig-1"},
        {"type": "text", "text": "Reading both."},
        {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "toolu_b", "name": "bash", "input": {"command": "ls"}},
    ], "tool_use")
    answer, requests = await answer_of(AnthropicProvider, body)
    assert requests == 1  # not taken for a dropped connection and asked again
    assert answer.text == "Reading both."
    thinking = [b for b in answer.content if isinstance(b, ThinkingContent)]
    assert [(b.thinking, b.signature) for b in thinking] == [("Two files.", "sig-1")]
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [
        ("toolu_a", "read", {"path": "a.py"}), ("toolu_b", "bash", {"command": "ls"})]
    assert answer.stop_reason == "toolUse"
    assert answer.usage is not None
    assert (answer.usage.input, answer.usage.output, answer.usage.cache_read) == (812, 31, 4096)


async def test_a_whole_anthropic_message_cut_at_max_tokens_says_so() -> None:
    body = message([{"type": "text", "text": "Here is the whole fi"}], "max_tokens")
    answer, requests = await answer_of(AnthropicProvider, body)
    assert requests == 1
    assert (answer.text, answer.stop_reason) == ("Here is the whole fi", "length")


# --- OpenAI Responses: a whole `response` --------------------------------------------------------


def response(output: list[dict[str, Any]], status: str = "completed",
             incomplete: str | None = None) -> dict[str, Any]:
    body = {"id": "resp_1", "object": "response", "created_at": 0, "model": GPT.id,
            "status": status, "output": output, "error": None,
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "instructions": None, "metadata": {}, "parallel_tool_calls": True,
            "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 4908, "output_tokens": 31, "total_tokens": 4939,
                      "input_tokens_details": {"cached_tokens": 4096, "cache_write_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 12}}}
    openai.types.responses.Response.model_validate(body)  # the API's shape, as the SDK reads it
    return body


REASONING = {"type": "reasoning", "id": "rs_1", "encrypted_content": "opaque",
             "summary": [{"type": "summary_text", "text": "Two files."},
                         {"type": "summary_text", "text": "Read both."}]}


def said(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
            "arguments": arguments, "status": "completed"}


async def test_a_whole_response_instead_of_a_stream_is_the_answer() -> None:
    body = response([REASONING, said("Reading both."),
                     function_call("call_a", "read", '{"path": "a.py"}'),
                     function_call("call_b", "bash", '{"command": "ls"}')])
    answer, requests = await answer_of(OpenAIResponsesProvider, body)
    assert requests == 1  # not taken for a dropped connection and asked again
    assert answer.text == "Reading both."
    thinking = [b for b in answer.content if isinstance(b, ThinkingContent)]
    assert [b.thinking for b in thinking] == ["Two files.\n\nRead both."]
    assert '"encrypted_content":"opaque"' in thinking[0].signature  # sent back next time
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [
        ("call_a", "read", {"path": "a.py"}), ("call_b", "bash", {"command": "ls"})]
    assert answer.stop_reason == "toolUse"
    assert answer.usage is not None
    assert (answer.usage.input, answer.usage.output, answer.usage.cache_read) == (812, 31, 4096)


async def test_a_whole_incomplete_response_cut_at_max_output_tokens_says_so() -> None:
    body = response([said("Here is the whole fi")], "incomplete", "max_output_tokens")
    answer, requests = await answer_of(OpenAIResponsesProvider, body)
    assert requests == 1
    assert (answer.text, answer.stop_reason) == ("Here is the whole fi", "length")


# --- the events a whole answer stands for are the SDK's stream events -----------------------------


@pytest.mark.parametrize(
    ("events_of", "body", "event_type"),
    [
        ("anthropic", message([{"type": "thinking", "thinking": "T", "signature": "s"},
                               {"type": "text", "text": "A"},
                               {"type": "tool_use", "id": "t", "name": "read",
                                "input": {"path": "a"}}], "tool_use"),
         anthropic.types.RawMessageStreamEvent),
        ("responses", response([REASONING, said("A"), function_call("c", "read", "{}")]),
         openai.types.responses.ResponseStreamEvent),
    ],
    ids=["anthropic", "responses"],
)
def test_a_whole_answer_becomes_events_the_sdk_reads_as_its_stream(
    events_of: str, body: dict[str, Any], event_type: Any
) -> None:
    expand = _stream_of_message if events_of == "anthropic" else _stream_of_response
    adapter: TypeAdapter[Any] = TypeAdapter(event_type)
    for event in expand(body):
        adapter.validate_python(event)


async def test_an_anthropic_error_object_sent_as_a_whole_200_body_is_that_error() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ProviderError) as raised:
        await answer_of(AnthropicProvider, error)
    assert "Overloaded" in raised.value.message
    assert raised.value.retryable
