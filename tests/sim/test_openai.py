"""The OpenAI Chat Completions and Responses APIs through the official SDK."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from agent_server.sim.server import SimServer
from tests.sim.builders import chat_tools, responses_tools

RESPONSE_EVENT = TypeAdapter(ResponseStreamEvent)
USER = {"role": "user", "content": "Read the readme please."}


# --- chat completions -----------------------------------------------------------------------


async def test_chat_answer_and_tool_round_trip(openai_client: AsyncOpenAI) -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, USER]
    finishes = []
    for _ in range(3):
        completion = await openai_client.chat.completions.create(
            model="sim-small", messages=messages, tools=chat_tools()
        )
        choice = completion.choices[0]
        finishes.append(choice.finish_reason)
        calls = choice.message.tool_calls or []
        messages.append({
            "role": "assistant",
            "content": choice.message.content,
            **({"tool_calls": [c.model_dump() for c in calls]} if calls else {}),
        })
        messages.extend(
            {"role": "tool", "tool_call_id": c.id, "content": f"output of {c.function.arguments}"}
            for c in calls
        )
    assert finishes == ["tool_calls", "tool_calls", "stop"]
    assert messages[-1]["content"] == "The readme says hello."
    second_calls = messages[4]["tool_calls"]
    assert [json.loads(c["function"]["arguments"])["path"] for c in second_calls] == [
        "README.md", "setup.py",
    ]
    assert all(c["id"].startswith("call_sim_0_1_") for c in second_calls)
    assert completion.usage is not None
    assert completion.usage.prompt_tokens > 0


async def test_chat_stream_with_usage_chunk(openai_client: AsyncOpenAI) -> None:
    stream = await openai_client.chat.completions.create(
        model="sim-small",
        messages=[USER],
        tools=chat_tools(),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finals] == ["tool_calls"]
    fragments = [
        call.function.arguments
        for c in chunks if c.choices and c.choices[0].delta.tool_calls
        for call in c.choices[0].delta.tool_calls
        if call.function and call.function.arguments
    ]
    assert len(fragments) >= 3
    assert json.loads("".join(fragments)) == {"path": "."}
    usage = chunks[-1].usage
    assert not chunks[-1].choices
    assert usage is not None
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 0
    assert all(c.usage is None for c in chunks[:-1])


async def test_chat_stream_chunks_match_the_sdk_type_strictly(server: SimServer) -> None:
    body = {"model": "sim-small", "messages": [USER], "stream": True,
            "stream_options": {"include_usage": True}, "tools": chat_tools()}
    async with httpx2.AsyncClient() as client:
        response = await client.post(f"{server.base_url}/v1/chat/completions", json=body,
                                     headers={"authorization": "Bearer k"})
    lines = [line for line in response.text.split("\n") if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    for line in lines[:-1]:
        ChatCompletionChunk.model_validate_json(line.removeprefix("data: "))


@pytest.mark.parametrize(
    ("messages", "message", "param"),
    [
        (
            [USER, {"role": "tool", "tool_call_id": "call_1", "content": "x"}],
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
            "message with 'tool_calls'.",
            "messages[1].role",
        ),
        (
            [USER, {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            ]}, {"role": "tool", "tool_call_id": "call_1", "content": "x"}, USER],
            "An assistant message with 'tool_calls' must be followed by tool messages responding "
            "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
            "call_2",
            "messages.[1].role",
        ),
        (
            [],
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got "
            "an empty array instead.",
            "messages",
        ),
    ],
)
async def test_chat_validation_errors(openai_client: AsyncOpenAI, messages: list[Any],
                                      message: str, param: str) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        await openai_client.chat.completions.create(model="sim-small", messages=messages)
    assert isinstance(error.value.body, dict)
    assert error.value.body["message"] == message
    assert error.value.body["param"] == param
    assert error.value.body["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("name", "parameters", "message", "code"),
    [
        ("read file", None, "string does not match pattern. Expected a string that matches the "
         "pattern '^[a-zA-Z0-9_-]+$'.", "invalid_value"),
        ("t" * 65, None, "string too long. Expected a string with maximum length 64, but got a "
         "string with length 65 instead.", "string_above_max_length"),
        ("t", {"type": "object", "properties": {"x": {"type": "strnig"}}},
         "Invalid schema for function 't': 'strnig' is not valid under any of the given schemas.",
         "invalid_function_parameters"),
    ],
)
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_function_tools_are_refused_as_the_api_refuses_them(
    openai_client: AsyncOpenAI, api: str, name: str, parameters: Any, message: str, code: str
) -> None:
    function: dict[str, Any] = {"name": name, "description": "d"}
    if parameters is not None:
        function["parameters"] = parameters
    where = "tools[0].function" if api == "chat" else "tools[0]"
    body: dict[str, Any] = (
        {"model": "sim-small", "messages": [USER], "tools": [{"type": "function",
                                                              "function": function}]}
        if api == "chat"
        else {"model": "sim-small", "input": "hi", "tools": [{"type": "function", **function}]}
    )
    path = "/chat/completions" if api == "chat" else "/responses"
    with pytest.raises(openai.BadRequestError) as error:
        await openai_client.post(path, cast_to=object, body=body)
    assert isinstance(error.value.body, dict)
    assert error.value.code == code
    field = "parameters" if parameters is not None else "name"
    assert error.value.body["param"] == f"{where}.{field}"
    expected = message if parameters is not None else f"Invalid '{where}.name': {message}"
    assert error.value.body["message"] == expected


async def test_chat_wrong_types_and_unknown_models(openai_client: AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        await openai_client.post("/chat/completions", cast_to=object,
                                 body={"model": "sim-small", "messages": "hi"})
    assert error.value.code == "invalid_type"
    assert "Invalid type for 'messages': expected an array, but got a string instead." in str(
        error.value.body
    )
    with pytest.raises(openai.BadRequestError) as unknown:
        await openai_client.post("/chat/completions", cast_to=object,
                                 body={"model": "sim-small", "messages": [USER], "thinking": {}})
    assert "Unrecognized request argument supplied: thinking" in str(unknown.value.body)
    with pytest.raises(openai.BadRequestError) as unknown_response:
        await openai_client.post("/responses", cast_to=object,
                                 body={"model": "sim-small", "input": "x", "messages": []})
    assert unknown_response.value.code == "unknown_parameter"
    with pytest.raises(openai.NotFoundError) as missing:
        await openai_client.chat.completions.create(model="gpt-nonexistent", messages=[USER])
    assert missing.value.code == "model_not_found"
    assert isinstance(missing.value.body, dict)
    assert missing.value.body["message"] == (
        "The model `gpt-nonexistent` does not exist or you do not have access to it."
    )


async def test_openai_models_and_missing_key(server: SimServer, openai_client: AsyncOpenAI) -> None:
    page = await openai_client.models.list()
    assert {"sim-small", "sim-large"} <= {model.id for model in page.data}
    assert all(model.object == "model" for model in page.data)
    async with httpx2.AsyncClient() as client:
        response = await client.post(f"{server.base_url}/v1/chat/completions",
                                     json={"model": "sim-small", "messages": [USER]})
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["message"].startswith("You didn't provide an API key.")
    assert error["type"] == "invalid_request_error"


# --- responses ------------------------------------------------------------------------------


async def test_responses_tool_round_trip(openai_client: AsyncOpenAI) -> None:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Read the readme please."}]
    statuses = []
    for _ in range(3):
        response = await openai_client.responses.create(
            model="sim-small", input=items, tools=responses_tools(), store=False
        )
        statuses.append(response.status)
        calls = [item for item in response.output if item.type == "function_call"]
        items.extend(item.model_dump(exclude_none=True) for item in response.output)
        items.extend(
            {"type": "function_call_output", "call_id": call.call_id, "output": "ok"}
            for call in calls
        )
    assert statuses == ["completed"] * 3
    assert response.output_text == "The readme says hello."
    assert response.usage is not None
    assert response.usage.input_tokens_details.cached_tokens == 0


async def test_responses_stream_events_parse_and_complete(openai_client: AsyncOpenAI,
                                                          server: SimServer) -> None:
    async with openai_client.responses.stream(
        model="sim-small", input="Read the readme please.", tools=responses_tools()
    ) as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in kinds
    assert "response.output_text.delta" in kinds
    call = next(item for item in final.output if item.type == "function_call")
    assert (call.name, json.loads(call.arguments)) == ("ls", {"path": "."})

    bodies = [
        {"model": "sim-small", "input": "Read the readme please.", "stream": True,
         "tools": responses_tools()},
        {"model": "test-thinker", "input": "Think, then answer.", "stream": True,
         "reasoning": {"effort": "low", "summary": "auto"},
         "include": ["reasoning.encrypted_content"]},
        {"model": "sim-small", "input": "Write a long answer.", "stream": True,
         "max_output_tokens": 20},
    ]
    kinds = []
    async with httpx2.AsyncClient() as client:
        for body in bodies:
            response = await client.post(f"{server.base_url}/v1/responses", json=body,
                                         headers={"authorization": "Bearer k"})
            chunks = [c for c in response.text.split("\n\n") if c.strip()]
            for number, chunk in enumerate(chunks):
                event_line, data_line = chunk.split("\n")
                data = json.loads(data_line.removeprefix("data: "))
                assert event_line == f"event: {data['type']}"
                assert data["sequence_number"] == number
                RESPONSE_EVENT.validate_python(data)
                kinds.append(data["type"])
    assert "response.reasoning_summary_text.delta" in kinds
    assert "response.incomplete" in kinds


async def test_responses_reasoning_summary_and_previous_response_id(
    openai_client: AsyncOpenAI,
) -> None:
    first = await openai_client.responses.create(
        model="test-thinker", input="Think, then answer.",
        reasoning={"effort": "medium", "summary": "auto"},
    )
    kinds = [item.type for item in first.output]
    assert kinds == ["reasoning", "message"]
    reasoning = first.output[0]
    assert reasoning.type == "reasoning"
    assert reasoning.summary[0].text == "Let me think about it carefully."
    assert first.usage is not None
    assert first.usage.output_tokens_details.reasoning_tokens > 0
    second = await openai_client.responses.create(
        model="test-thinker", input="Read the readme please.", previous_response_id=first.id
    )
    assert second.status == "completed"
    with pytest.raises(openai.BadRequestError) as error:
        await openai_client.responses.create(model="test-thinker", input="x",
                                             previous_response_id="resp_unknown")
    assert error.value.code == "previous_response_not_found"


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (
            [{"role": "user", "content": "hi"},
             {"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{}"}],
            "No tool output found for function call call_1.",
        ),
        (
            [{"role": "user", "content": "hi"},
             {"type": "function_call_output", "call_id": "call_9", "output": "x"}],
            "No tool call found for function call output with call_id call_9.",
        ),
    ],
)
async def test_responses_validation_errors(openai_client: AsyncOpenAI, items: list[Any],
                                           message: str) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        await openai_client.responses.create(model="sim-small", input=items)
    assert isinstance(error.value.body, dict)
    assert error.value.body["message"] == message
    assert error.value.body["param"] == "input"


async def test_reasoning_effort_is_checked_as_the_api_does(openai_client: AsyncOpenAI) -> None:
    ok = await openai_client.responses.create(
        model="test-thinker", input="Think, then answer.", reasoning={"effort": "high"}
    )
    assert ok.status == "completed"
    chat = await openai_client.chat.completions.create(
        model="test-thinker", messages=[{"role": "user", "content": "hi"}], reasoning_effort="low"
    )
    assert chat.choices
    with pytest.raises(openai.BadRequestError) as bad_value:
        await openai_client.responses.create(
            model="test-thinker", input="x", reasoning={"effort": "extreme"}  # type: ignore[typeddict-item]
        )
    assert bad_value.value.code == "invalid_value" and "'xhigh'" in bad_value.value.message
    with pytest.raises(openai.BadRequestError) as not_reasoning:
        await openai_client.chat.completions.create(
            model="sim-small", messages=[{"role": "user", "content": "hi"}], reasoning_effort="low"
        )
    assert not_reasoning.value.code == "unsupported_parameter"
    assert "'reasoning_effort' is not supported with this model" in not_reasoning.value.message
