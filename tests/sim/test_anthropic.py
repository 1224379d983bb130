"""The Anthropic Messages API through the official SDK: answers, streams, tools, thinking,
token counting, models, and the validation errors with the real wording."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import RawMessageStreamEvent
from pydantic import TypeAdapter

from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.sim.builders import anthropic_tools

STREAM_EVENT = TypeAdapter(RawMessageStreamEvent)


def block_json(block: Any) -> dict[str, Any]:
    data: dict[str, Any] = block.model_dump(exclude_none=True)
    if data.get("type") == "tool_use":
        data.pop("caller", None)
    return data


async def test_a_scenario_prompt_gets_its_first_step(anthropic_client: AsyncAnthropic) -> None:
    message = await anthropic_client.messages.create(
        model="sim-small",
        max_tokens=1000,
        tools=anthropic_tools(),
        messages=[{"role": "user", "content": "Read the readme please."}],
    )
    assert message.stop_reason == "tool_use"
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.content[0].text == "Listing first."
    call = message.content[1]
    assert call.type == "tool_use"
    assert (call.name, call.input) == ("ls", {"path": "."})
    assert call.id.startswith("toolu_sim_0_0_0_")
    assert message.usage.input_tokens > 0
    assert message.usage.output_tokens > 0
    assert message.usage.cache_read_input_tokens == 0


async def raw_events(server: SimServer, body: dict[str, Any]) -> list[str]:
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    async with httpx2.AsyncClient() as client:
        response = await client.post(f"{server.base_url}/v1/messages", json=body, headers=headers)
    assert response.headers["content-type"].startswith("text/event-stream")
    return [chunk for chunk in response.text.split("\n\n") if chunk.strip()]


async def test_the_stream_has_event_lines_and_matches_the_sdk_types(server: SimServer) -> None:
    thinking = await raw_events(server, {
        "model": "sim-small",
        "max_tokens": 2000,
        "stream": True,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [{"role": "user", "content": "Think, then answer."}],
    })
    events = await raw_events(server, {
        "model": "sim-small",
        "max_tokens": 1000,
        "stream": True,
        "tools": anthropic_tools(),
        "messages": [{"role": "user", "content": "Read the readme please."}],
    })
    assert "signature_delta" in "".join(thinking)
    for chunk in thinking:
        data = json.loads(chunk.split("\n")[1].removeprefix("data: "))
        if data["type"] != "ping":
            STREAM_EVENT.validate_python(data)
    names = []
    for chunk in events:
        lines = chunk.split("\n")
        assert lines[0].startswith("event: ")
        assert lines[1].startswith("data: ")
        name = lines[0].removeprefix("event: ")
        data = json.loads(lines[1].removeprefix("data: "))
        assert data["type"] == name
        names.append(name)
        if name != "ping":
            STREAM_EVENT.validate_python(data)
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    deltas = [json.loads(c.split("\n")[1][6:]) for c in events if "input_json_delta" in c]
    assert len(deltas) >= 3  # the arguments arrive in several fragments
    assert json.loads("".join(d["delta"]["partial_json"] for d in deltas)) == {"path": "."}


async def test_tool_calls_round_trip_through_the_stream_helper(
    anthropic_client: AsyncAnthropic,
) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read the readme please."}]
    stops = []
    texts = []
    for _ in range(3):
        async with anthropic_client.messages.stream(
            model="sim-small",
            max_tokens=2000,
            tools=anthropic_tools(),
            messages=messages,
        ) as stream:
            message = await stream.get_final_message()
        stops.append(message.stop_reason)
        texts.append("".join(b.text for b in message.content if b.type == "text"))
        messages.append({"role": "assistant", "content": [block_json(b) for b in message.content]})
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": f"contents of {b.input}"}
            for b in message.content
            if b.type == "tool_use"
        ]
        if results:
            messages.append({"role": "user", "content": results})
    assert stops == ["tool_use", "tool_use", "end_turn"]
    reads = [b["input"]["path"] for b in messages[3]["content"] if b["type"] == "tool_use"]
    assert reads == ["README.md", "setup.py"]  # parallel calls in one step
    assert texts[2] == "The readme says hello."


async def test_thinking_is_sent_when_enabled_and_its_signature_checked(
    anthropic_client: AsyncAnthropic,
) -> None:
    ask = [{"role": "user", "content": "Think, then answer."}]
    plain = await anthropic_client.messages.create(model="sim-small", max_tokens=2000, messages=ask)
    assert [b.type for b in plain.content] == ["text"]

    thinking = {"type": "enabled", "budget_tokens": 1024}
    async with anthropic_client.messages.stream(
        model="sim-small", max_tokens=2000, messages=ask, thinking=thinking
    ) as stream:
        message = await stream.get_final_message()
    assert [b.type for b in message.content] == ["thinking", "text"]
    block = message.content[0]
    assert block.type == "thinking"
    assert block.thinking == "Let me think about it carefully."
    assert block.signature

    follow_up = [
        *ask,
        {"role": "assistant", "content": [block_json(b) for b in message.content]},
        {"role": "user", "content": "Thanks."},
    ]
    await anthropic_client.messages.create(model="sim-small", max_tokens=2000, messages=follow_up)
    follow_up[1]["content"][0]["signature"] = "forged"
    with pytest.raises(anthropic.BadRequestError) as error:
        await anthropic_client.messages.create(
            model="sim-small", max_tokens=2000, messages=follow_up
        )
    assert "Invalid `signature` in `thinking` block" in error.value.message


async def test_count_tokens_matches_the_billed_prompt(anthropic_client: AsyncAnthropic) -> None:
    request: dict[str, Any] = {
        "model": "sim-small",
        "system": "You are terse.",
        "tools": anthropic_tools(),
        "messages": [{"role": "user", "content": "Read the readme please."}],
    }
    counted = await anthropic_client.messages.count_tokens(**request)
    message = await anthropic_client.messages.create(max_tokens=100, **request)
    usage = message.usage
    billed = (
        usage.input_tokens
        + (usage.cache_read_input_tokens or 0)
        + (usage.cache_creation_input_tokens or 0)
    )
    assert counted.input_tokens == billed > 0


async def test_models_are_listed_in_anthropic_format(anthropic_client: AsyncAnthropic) -> None:
    page = await anthropic_client.models.list()
    ids = [model.id for model in page.data]
    assert {"sim-small", "sim-large", "test-tiny"} <= set(ids)
    model = await anthropic_client.models.retrieve("sim-small")
    assert model.display_name
    assert model.type == "model"


USER = {"role": "user", "content": "Read the readme please."}
CALL = {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"messages": [{"role": "assistant", "content": "hi"}]},
            'messages: first message must use the "user" role',
        ),
        (
            {"messages": [USER, {"role": "assistant", "content": [CALL]},
                          {"role": "system", "content": "between a call and its result"},
                          {"role": "user", "content": [RESULT]}]},
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
            "after: toolu_1.",
        ),
        (
            {"messages": [USER, {"role": "system", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": "AA=="}}]}]},
            "messages.1.content.0.type: Input should be 'text'",
        ),
        (
            {"messages": [USER, {"role": "assistant", "content": [CALL]},
                          {"role": "user", "content": "a prompt first"},
                          {"role": "user", "content": [RESULT]}]},
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
            "after: toolu_1.",
        ),
        (
            {"messages": [USER, {"role": "assistant", "content": "a"},
                          {"role": "user", "content": [RESULT]}]},
            "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
            "toolu_1. Each `tool_result` block must have a corresponding `tool_use` block in the "
            "previous message.",
        ),
        (
            {"messages": [USER, {"role": "assistant", "content": [CALL]},
                          {"role": "user", "content": "and?"}]},
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
            "after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block "
            "in the next message.",
        ),
        (
            {"messages": [USER, {"role": "assistant", "content": [CALL]},
                          {"role": "user", "content": [{"type": "text", "text": "first"},
                                                       RESULT]}]},
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
            "after: toolu_1.",
        ),
        (
            {"system": [{"type": "text", "text": f"s{i}", "cache_control": {"type": "ephemeral"}}
                        for i in range(5)]},
            "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]},
            "messages: text content blocks must be non-empty",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "  "}]}]},
            "messages: text content blocks must contain non-whitespace text",
        ),
        (
            {"tools": [{"name": "t", "input_schema": {"type": "object", "properties": {
                "x": {"type": "strnig"}}}}]},
            "tools.0.custom.input_schema: JSON schema is invalid. It must match JSON Schema "
            "draft 2020-12",
        ),
        (
            {"tools": [{"name": "t", "input_schema": {"type": "object", "anyOf": [
                {"required": ["a"]}, {"required": ["b"]}]}}]},
            "tools.0.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf "
            "at the top level",
        ),
        ({"max_tokens": None}, "max_tokens: Field required"),
        ({"reasoning_effort": "high"}, "reasoning_effort: Extra inputs are not permitted"),
        (
            {"messages": [{"role": "user", "content": "hi", "stopReason": "stop"}]},
            "messages.0.stopReason: Extra inputs are not permitted",
        ),
        ({"model": None}, "model: Field required"),
        ({"messages": None}, "messages: Field required"),
        ({"max_tokens": "ten"}, "max_tokens: Input should be a valid integer"),
        (
            {"max_tokens": 999_999},
            "max_tokens: 999999 > 4096, which is the maximum allowed number of output tokens "
            "for sim-small",
        ),
    ],
)
async def test_invalid_requests_get_the_real_messages(
    server: SimServer, change: dict[str, Any], message: str
) -> None:
    body: dict[str, Any] = {"model": "sim-small", "max_tokens": 100, "messages": [USER]}
    body.update(change)
    body = {k: v for k, v in body.items() if v is not None}
    client = AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as error:
        # The low-level call: the SDK's typed method refuses a missing field before sending.
        await client.post("/v1/messages", body=body, cast_to=object)
    assert error.value.status_code == 400
    assert isinstance(error.value.body, dict)
    assert error.value.body["type"] == "error"
    assert error.value.body["error"]["type"] == "invalid_request_error"
    assert error.value.body["error"]["message"].startswith(message)
    assert error.value.body["request_id"].startswith("req_")
    await client.close()


async def test_an_unknown_model_is_not_found(anthropic_client: AsyncAnthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as error:
        await anthropic_client.messages.create(model="claude-nonexistent", max_tokens=10,
                                        messages=[USER])
    assert isinstance(error.value.body, dict)
    assert error.value.body["error"] == {"type": "not_found_error",
                                         "message": "model: claude-nonexistent"}


async def test_a_request_without_a_key_is_refused(server: SimServer) -> None:
    async with httpx2.AsyncClient() as client:
        response = await client.post(
            f"{server.base_url}/v1/messages",
            json={"model": "sim-small", "max_tokens": 10, "messages": [USER]},
            headers={"anthropic-version": "2023-06-01"},
        )
    assert response.status_code == 401
    assert response.json()["error"] == {"type": "authentication_error",
                                         "message": "x-api-key header is required"}


async def test_the_real_sdk_sends_bearer_auth_and_is_accepted(
    simulator: Simulator, anthropic_client: AsyncAnthropic
) -> None:
    await anthropic_client.messages.create(model="sim-small", max_tokens=10, messages=[USER])
    assert simulator.records[-1].status == 200


async def test_adaptive_thinking_and_effort_are_accepted_and_part_of_the_message_cache(
    anthropic_client: AsyncAnthropic,
) -> None:
    ask = [{"role": "user", "content": [{"type": "text", "text": "Think, then answer. " * 300,
                                         "cache_control": {"type": "ephemeral"}}]}]

    async def call(effort: str) -> Any:
        return await anthropic_client.messages.create(
            model="sim-small", max_tokens=2000, messages=ask,
            thinking={"type": "adaptive", "display": "summarized"},
            output_config={"effort": effort},
        )

    first = await call("low")
    assert [b.type for b in first.content] == ["thinking", "text"]
    again = await call("low")
    assert again.usage.cache_read_input_tokens and again.usage.cache_read_input_tokens > 0
    # Another effort is another thinking setting: the messages are not read from the cache.
    other = await call("high")
    assert not other.usage.cache_read_input_tokens
    assert other.usage.cache_creation_input_tokens


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"thinking": {"type": "adaptive", "budget_tokens": 2048}},
         "thinking.adaptive.budget_tokens: Extra inputs are not permitted"),
        ({"thinking": {"type": "adaptive", "display": "full"}},
         "thinking.adaptive.display: Input should be 'summarized' or 'omitted'"),
        ({"output_config": {"effort": "extreme"}},
         "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"),
        ({"thinking": {"type": "sometimes"}},
         "does not match any of the expected tags: 'enabled', 'disabled', 'adaptive', "
         "'between_tools'"),
    ],
)
async def test_thinking_fields_are_checked_as_the_api_does(
    anthropic_client: AsyncAnthropic, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as error:
        await anthropic_client.messages.create(
            model="sim-small", max_tokens=2000, messages=[{"role": "user", "content": "hi"}],
            **fields,
        )
    assert message in error.value.message
