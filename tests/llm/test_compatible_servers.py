"""What a user of a local OpenAI-compatible server (Ollama, llama.cpp's llama-server, vLLM,
LM Studio, OpenRouter) sees when the server answers in its own way: each test puts a server
on a real socket that answers as that one does (`wire_server`), and runs the Chat Completions
provider, through the official SDK, against it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agent_server.errors import InvalidRequestError, ModelNotFoundError, ProviderError
from agent_server.llm.messages import AssistantMessage, Context, ThinkingContent
from agent_server.llm.models import ModelInfo
from agent_server.llm.openai_chat import OpenAIChatProvider
from agent_server.llm.stream import CallOptions, MessageDone
from tests.llm.builders import SYSTEM, TOOLS, user
from tests.llm.wire_server import Answer, sse_body, wire_server

CONTEXT = Context(SYSTEM, TOOLS, (user("Read README.md"),))


def local_model(base_url: str) -> ModelInfo:
    return ModelInfo("qwen3:8b", "qwen3:8b", "local", 32768, 8192, base_url=base_url)


def azure_model(base_url: str) -> ModelInfo:
    """An OpenAI model at a base URL (an Azure OpenAI deployment, a proxy)."""
    return ModelInfo("gpt-4o", "gpt-4o", "openai", 128000, 16384, base_url=base_url)


async def calls(
    answer: Answer | Callable[[dict[str, Any]], Answer],
    count: int = 1,
    model: Callable[[str], ModelInfo] = local_model,
) -> tuple[list[AssistantMessage], list[dict[str, Any]]]:
    """`count` streamed calls through one provider against a server giving `answer`: the
    messages, and the requests."""
    messages: list[AssistantMessage] = []
    async with wire_server(answer) as server:
        provider = OpenAIChatProvider(None, server.base_url)
        try:
            for _ in range(count):
                events = [
                    event
                    async for event in provider.stream(
                        model(server.base_url), CONTEXT, CallOptions()
                    )
                ]
                done = events[-1]
                assert isinstance(done, MessageDone)
                messages.append(done.message)
        finally:
            await provider.aclose()
    return messages, server.requests


async def call(
    answer: Answer | Callable[[dict[str, Any]], Answer],
) -> tuple[AssistantMessage, list[dict[str, Any]]]:
    """One streamed call against a server giving `answer`: the message, and the requests."""
    messages, requests = await calls(answer)
    return messages[0], requests


async def failure(answer: Answer | Callable[[dict[str, Any]], Answer]) -> ProviderError:
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


@pytest.mark.parametrize(
    ("prompt", "output", "stop_reason"),
    [
        # llama.cpp stops with "length" when prompt and output reach its window (-c: here the
        # model's 32768), as it does at max_tokens.
        (31568, 1200, "contextOverflow"),
        (31568, 8192, "length"),
        # The server's own cap on the output (llama-server -n 1200, a proxy's limit): the
        # prompt and the output are far from the window, which did not fill.
        (2048, 1200, "length"),
        (32000, 700, "contextOverflow"),  # a token or so short of the window: filled
    ],
    ids=["window filled", "output limit", "server's output cap", "window nearly filled"],
)
async def test_a_length_finish_before_the_output_limit_is_the_window_filling(
    prompt: int, output: int, stop_reason: str
) -> None:
    # Only the sizes tell the output limit, the server's own cap and the window apart.
    usage = {"prompt_tokens": prompt, "completion_tokens": output,
             "total_tokens": prompt + output}
    body = sse_body([chunk({"role": "assistant", "content": "Here is the whole fi"}),
                     chunk({}, "length") | {"usage": usage}])
    message, requests = await call(Answer(body=body))
    assert requests[0]["max_tokens"] == 8192
    assert message.stop_reason == stop_reason
    assert message.text == "Here is the whole fi"


# --- a server that refuses stream_options -------------------------------------------------------

# Mistral's API validates the body strictly (pydantic), with a 422.
MISTRAL_EXTRA = Answer(422, {
    "object": "error",
    "message": {"detail": [{"type": "extra_forbidden", "loc": ["body", "stream_options"],
                            "msg": "Extra inputs are not permitted",
                            "input": {"include_usage": True},
                            "url": "https://errors.pydantic.dev/2.6/v/extra_forbidden"}]},
    "type": "invalid_request_error", "param": None, "code": None})
# Azure OpenAI before api-version 2024-09-01-preview.
AZURE_UNRECOGNIZED = Answer(400, {"error": {
    "message": "Unrecognized request argument supplied: stream_options. Please contact us "
               "through an Azure support request at: https://go.microsoft.com/fwlink/"
               "?linkid=2213926 for further questions.",
    "type": "invalid_request_error", "param": None, "code": None}})
# Proxies relaying to an upstream without it (new-api, one-api).
PROXY_UNKNOWN = Answer(400, {"error": {
    "message": "Unknown parameter: 'stream_options'.", "type": "invalid_request_error",
    "param": "stream_options", "code": "unknown_parameter"}})

USAGE = {"prompt_tokens": 812, "completion_tokens": 31, "total_tokens": 843}


def refusing_stream_options(refusal: Answer, body: str) -> Callable[[dict[str, Any]], Answer]:
    return lambda request: refusal if "stream_options" in request else Answer(body=body)


@pytest.mark.parametrize(
    ("refusal", "model", "usage"),
    [
        (MISTRAL_EXTRA, local_model, USAGE),  # Mistral puts usage in its last chunk anyway
        (AZURE_UNRECOGNIZED, azure_model, None),
        (PROXY_UNKNOWN, local_model, None),
    ],
    ids=["mistral", "azure", "proxy"],
)
async def test_a_server_that_refuses_stream_options_is_asked_again_without_it(
    refusal: Answer, model: Callable[[str], ModelInfo], usage: dict[str, int] | None
) -> None:
    last = chunk({}, "stop") | ({"usage": usage} if usage else {})
    body = sse_body([chunk({"role": "assistant", "content": "Hello"}), last])
    messages, requests = await calls(refusing_stream_options(refusal, body), 2, model)
    assert [message.text for message in messages] == ["Hello", "Hello"]
    assert messages[0].stop_reason == "stop"
    # Refused once, then left out for the provider's life: the second call asks once.
    assert ["stream_options" in request for request in requests] == [True, False, False]
    if usage:
        assert messages[0].usage is not None and messages[0].usage.input == 812
    else:
        assert messages[0].usage is None  # the context meter estimates this answer's size


def counted(answer: Answer, requests: list[dict[str, Any]]) -> Callable[[dict[str, Any]], Answer]:
    def answer_for(request: dict[str, Any]) -> Answer:
        requests.append(request)
        return answer

    return answer_for


async def test_stream_options_is_left_out_once_only() -> None:
    # A server that names stream_options whatever is sent: one retry, then its error.
    requests: list[dict[str, Any]] = []
    raised = await failure(counted(PROXY_UNKNOWN, requests))
    assert isinstance(raised, InvalidRequestError)
    assert "Unknown parameter: 'stream_options'." in raised.message
    assert ["stream_options" in request for request in requests] == [True, False]


async def test_a_refusal_of_another_field_is_not_retried() -> None:
    refusal = Answer(422, {"object": "error", "message": {"detail": [
        {"type": "extra_forbidden", "loc": ["body", "frequency_penalty"],
         "msg": "Extra inputs are not permitted", "input": 0.0}]},
        "type": "invalid_request_error", "param": None, "code": None})
    requests: list[dict[str, Any]] = []
    raised = await failure(counted(refusal, requests))
    assert isinstance(raised, InvalidRequestError)
    assert len(requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"object": "error", "message": {"detail": [{"type": "extra_forbidden",
         "loc": ["body", "frequency_penalty"], "msg": "Extra inputs are not permitted"}]},
         "type": "invalid_request_error", "param": None, "code": None},
        # Mistral's API since 2025: the list under both `detail` and `message`.
        {"object": "Error", "detail": [{"type": "extra_forbidden",
         "loc": ["body", "frequency_penalty"], "msg": "Extra inputs are not permitted"}],
         "message": [{"type": "extra_forbidden", "loc": ["body", "frequency_penalty"],
                      "msg": "Extra inputs are not permitted"}],
         "type": "invalid_request_error", "code": 3001},
    ],
    ids=["mistral 2024", "mistral 2025"],
)
async def test_a_validation_error_says_which_field(body: dict[str, Any]) -> None:
    raised = await failure(Answer(422, body))
    assert isinstance(raised, InvalidRequestError)
    assert "422: body.frequency_penalty: Extra inputs are not permitted" in raised.message


# --- a server that ignores stream: true ---------------------------------------------------------


def completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    """A whole chat completion, as a server that does not stream answers."""
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "qwen3:8b",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": USAGE}


async def test_a_whole_completion_instead_of_a_stream_is_the_answer() -> None:
    message = {"role": "assistant", "content": "Reading both.", "reasoning_content": "Two.",
               "tool_calls": [
                   {"id": "call_a", "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "a.py"}'}},
                   {"id": "call_b", "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]}
    answer, requests = await call(Answer(body=completion(message, "tool_calls")))
    assert len(requests) == 1  # not taken for a dropped connection and asked again
    assert answer.text == "Reading both."
    assert [b.thinking for b in answer.content if isinstance(b, ThinkingContent)] == ["Two."]
    assert [(c.name, c.arguments) for c in answer.tool_calls] == TWO_CALLS
    assert answer.stop_reason == "toolUse"
    assert answer.usage is not None and answer.usage.input == 812
    assert answer.usage.output == 31



# --- a tool call's arguments sent again whole at its end ----------------------------------------


def whole_again(*pieces: str) -> str:
    """A call streamed in `pieces`, then its arguments whole in the last chunk, as some vLLM
    tool parsers flush them (GLM, xlam): with null id, type and name, and the finish."""
    whole = {"index": 0, "id": None, "type": None,
             "function": {"name": None, "arguments": '{"path": "a.py"}'}}
    chunks = [chunk({"role": "assistant", "content": None}),
              chunk({"tool_calls": [fragment(0, "call_a", "read", "")]})]
    chunks += [chunk({"tool_calls": [fragment(0, arguments=piece)]}) for piece in pieces]
    chunks.append(chunk({"tool_calls": [whole]}, "tool_calls"))
    return sse_body(chunks)


@pytest.mark.parametrize(
    "pieces",
    [('{"path": ', '"a.py"}'), ('{"path":"a.py"}',), ("{",)],
    ids=["same text", "other spacing", "a start only"],
)
async def test_arguments_sent_again_whole_at_the_end_are_taken_once(
    pieces: tuple[str, ...],
) -> None:
    message, _ = await call(Answer(body=whole_again(*pieces)))
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("read", {"path": "a.py"})]


@pytest.mark.parametrize(
    ("pieces", "arguments"),
    [
        # Valid as sent: never changed, whatever repeats in it.
        (['{"command": "echo {\\"a\\": 1}', '{\\"a\\": 1}"}'],
         {"command": 'echo {"a": 1}{"a": 1}'}),
        # Invalid, but the last piece is not the earlier ones again: kept raw for the tool.
        (['{"path": "a.py"}', '{"path": "b.py"}'], {"_raw": '{"path": "a.py"}{"path": "b.py"}'}),
    ],
    ids=["repeated text", "two objects"],
)
async def test_other_arguments_are_taken_as_sent(
    pieces: list[str], arguments: dict[str, str]
) -> None:
    body = calls_in([fragment(0, "call_a", "bash", "")],
                    *[[fragment(0, arguments=piece)] for piece in pieces])
    message, _ = await call(Answer(body=body))
    assert [c.arguments for c in message.tool_calls] == [arguments]
