"""What a user of a local OpenAI-compatible server (Ollama, llama.cpp's llama-server, vLLM,
LM Studio, OpenRouter) sees when the server answers in its own way: each test puts a server
on a real socket that answers as that one does (`wire_server`), and runs the Chat Completions
provider, through the official SDK, against it."""

from __future__ import annotations

from typing import Any

import pytest

from agent_server.errors import InvalidRequestError, ModelNotFoundError, ProviderError
from agent_server.llm.messages import AssistantMessage, Context
from agent_server.llm.models import ModelInfo
from agent_server.llm.openai_chat import OpenAIChatProvider
from agent_server.llm.stream import CallOptions, MessageDone
from tests.llm.builders import SYSTEM, TOOLS, user
from tests.llm.wire_server import Answer, sse_body, wire_server

CONTEXT = Context(SYSTEM, TOOLS, (user("Read README.md"),))


def local_model(base_url: str) -> ModelInfo:
    return ModelInfo("qwen3:8b", "qwen3:8b", "local", 32768, 8192, base_url=base_url)


async def call(answer: Answer) -> tuple[AssistantMessage, list[dict[str, Any]]]:
    """One streamed call against a server giving `answer`: the message, and the requests."""
    async with wire_server(answer) as server:
        provider = OpenAIChatProvider(None, server.base_url)
        try:
            events = [
                event
                async for event in provider.stream(
                    local_model(server.base_url), CONTEXT, CallOptions()
                )
            ]
        finally:
            await provider.aclose()
    done = events[-1]
    assert isinstance(done, MessageDone)
    return done.message, server.requests


async def failure(answer: Answer) -> ProviderError:
    with pytest.raises(ProviderError) as raised:
        await call(answer)
    return raised.value


# --- a model or server that cannot take tools ---------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error"),
    [
        # Ollama relays every error with type `api_error`, its 400s included.
        (400, {"message": "registry.ollama.ai/library/gemma3:4b does not support tools",
               "type": "api_error", "param": None, "code": None}),
        (400, {"code": 400, "message": "tools param requires --jinja flag",
               "type": "invalid_request_error"}),
        # Some llama.cpp builds say it with a 500.
        (500, {"code": 500, "message": "tools param requires --jinja flag",
               "type": "server_error"}),
        (400, {"message": '"auto" tool choice requires --enable-auto-tool-choice and '
                          "--tool-call-parser to be set", "type": "BadRequestError",
               "param": None, "code": 400}),
        (404, {"message": "No endpoints found that support tool use.", "code": 404}),
    ],
    ids=["ollama", "llama.cpp 400", "llama.cpp 500", "vllm", "openrouter"],
)
async def test_a_model_without_tools_is_an_error_saying_what_to_do(
    status: int, error: dict[str, Any]
) -> None:
    raised = await failure(Answer(status, {"error": error}))
    assert isinstance(raised, InvalidRequestError)
    assert not raised.retryable  # the same request would be refused again
    assert "cannot give the model 'qwen3:8b' tools" in raised.message
    assert error["message"] in raised.message
    assert "choose a model that supports them" in raised.message
    assert "--jinja" in raised.message and "--enable-auto-tool-choice" in raised.message


async def test_an_ollama_400_typed_api_error_is_not_retried_as_a_server_error() -> None:
    error = {"message": "invalid image input", "type": "api_error", "param": None,
             "code": None}
    raised = await failure(Answer(400, {"error": error}))
    assert isinstance(raised, InvalidRequestError)
    assert not raised.retryable
    assert "invalid image input" in raised.message


async def test_an_ollama_model_that_is_not_pulled() -> None:
    error = {"message": 'model "qwen3:8b" not found, try pulling it first',
             "type": "api_error", "param": None, "code": None}
    raised = await failure(Answer(404, {"error": error}))
    assert isinstance(raised, ModelNotFoundError)
    assert "try pulling it first" in raised.message
    assert "ollama list" in raised.message


# --- streamed tool calls in each server's shape -------------------------------------------------


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
            "model": "qwen3:8b", "choices": [{"index": 0, "delta": delta,
                                              "finish_reason": finish}]}


def fragment(index: int | None = None, call_id: str | None = None, name: str | None = None,
             arguments: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"function": {}}
    if index is not None:
        out["index"] = index
    if call_id is not None:
        out["id"], out["type"] = call_id, "function"
    if name is not None:
        out["function"]["name"] = name
    if arguments is not None:
        out["function"]["arguments"] = arguments
    return out


def calls_in(*fragments: list[dict[str, Any]]) -> str:
    chunks = [chunk({"role": "assistant", "content": None})]
    chunks += [chunk({"tool_calls": group}) for group in fragments]
    chunks.append(chunk({}, "tool_calls"))
    return sse_body(chunks)


TWO_CALLS = [("read", {"path": "a.py"}), ("bash", {"command": "ls"})]


@pytest.mark.parametrize(
    "body",
    [
        # OpenAI's own shape: id and name first, arguments in pieces, `index` every time.
        calls_in([fragment(0, "call_a", "read", "")], [fragment(0, arguments='{"path": ')],
                 [fragment(0, arguments='"a.py"}')], [fragment(1, "call_b", "bash", "")],
                 [fragment(1, arguments='{"command": "ls"}')]),
        # Ollama, llama.cpp: each call whole in one fragment.
        calls_in([fragment(0, "call_a", "read", '{"path": "a.py"}')],
                 [fragment(1, "call_b", "bash", '{"command": "ls"}')]),
        # Gemini's OpenAI layer, mistral.rs, SGLang: no `index` at all.
        calls_in([fragment(None, "call_a", "read", '{"path": ')],
                 [fragment(None, arguments='"a.py"}')],
                 [fragment(None, "call_b", "bash", '{"command": "ls"}')]),
        # Both calls in one delta, without `index`.
        calls_in([fragment(None, "call_a", "read", '{"path": "a.py"}'),
                  fragment(None, "call_b", "bash", '{"command": "ls"}')]),
        # Ollama behind LiteLLM, dynamo: parallel calls all at `index` 0.
        calls_in([fragment(0, "call_a", "read", '{"path": "a.py"}')],
                 [fragment(0, "call_b", "bash", '{"command": "ls"}')]),
        # The name after the id.
        calls_in([fragment(0, "call_a")], [fragment(0, name="read")],
                 [fragment(0, arguments='{"path": "a.py"}')],
                 [fragment(1, "call_b", "bash", '{"command": "ls"}')]),
    ],
    ids=["openai", "whole", "no index", "one delta, no index", "one index", "late name"],
)
async def test_parallel_tool_calls_in_every_servers_shape(body: str) -> None:
    message, _ = await call(Answer(body=body))
    assert message.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in message.tool_calls] == TWO_CALLS
    assert len({c.id for c in message.tool_calls}) == 2


async def test_calls_without_ids_get_ids_of_their_own() -> None:
    body = calls_in([fragment(None, None, "read", '{"path": "a.py"}')],
                    [fragment(None, "", "bash", '{"command": "ls"}')])
    message, _ = await call(Answer(body=body))
    assert [(c.id, c.name) for c in message.tool_calls] == [("call_0", "read"), ("call_1", "bash")]
    body = calls_in([fragment(0, None, "read", '{"path": "a.py"}')],
                    [fragment(1, None, "bash", '{"command": "ls"}')])
    message, _ = await call(Answer(body=body))
    assert [c.id for c in message.tool_calls] == ["call_0", "call_1"]


# --- a base URL without its /v1 -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        # LM Studio answers an unknown path with 200 and an error object, not a stream.
        (Answer(200, '{"error":"Unexpected endpoint or method. (POST /chat/completions)"}',
                "application/json; charset=utf-8"),
         "Unexpected endpoint or method. (POST /chat/completions)"),
        (Answer(404, "404 page not found", "text/plain; charset=utf-8"), "404 page not found"),
        (Answer(404, {"detail": "Not Found"}), "Not Found"),
    ],
    ids=["lm studio", "ollama", "vllm"],
)
async def test_a_base_url_without_v1_says_to_check_base_url(answer: Answer, said: str) -> None:
    raised = await failure(answer)
    assert isinstance(raised, InvalidRequestError)
    assert not raised.retryable  # not a dropped connection, retried five times
    assert said in raised.message
    assert "has no such API endpoint" in raised.message
    assert "Check the 'baseUrl' setting" in raised.message
    assert "http://localhost:11434/v1" in raised.message


# --- an answer cut off by the window ------------------------------------------------------------


@pytest.mark.parametrize(("output", "stop_reason"), [(1200, "contextOverflow"), (8192, "length")])
async def test_a_length_finish_before_the_output_limit_is_the_window_filling(
    output: int, stop_reason: str
) -> None:
    # llama.cpp stops with "length" when prompt and output reach its window (-c), as it does
    # at max_tokens; only the output's size tells the two apart.
    usage = {"prompt_tokens": 31568, "completion_tokens": output,
             "total_tokens": 31568 + output}
    body = sse_body([chunk({"role": "assistant", "content": "Here is the whole fi"}),
                     chunk({}, "length") | {"usage": usage}])
    message, requests = await call(Answer(body=body))
    assert requests[0]["max_tokens"] == 8192
    assert message.stop_reason == stop_reason
    assert message.text == "Here is the whole fi"
