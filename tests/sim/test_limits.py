"""The context window and max_tokens: rejections and cut-offs in each API's own terms."""

from __future__ import annotations

import re

import anthropic
import openai
import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agent_server.sim.simulator import Simulator
from agent_server.sim.tokenizer import count_tokens
from tests.sim.builders import TINY, long_text

LONG_ANSWER = "Write a long answer."  # the scenario's 400-token filler turn


async def test_anthropic_rejects_a_prompt_over_the_window(anthropic_client: AsyncAnthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as error:
        await anthropic_client.messages.create(
            model=TINY.id, max_tokens=100,
            messages=[{"role": "user", "content": long_text(3500)}],
        )
    body = error.value.body
    assert isinstance(body, dict)
    match = re.fullmatch(r"prompt is too long: (\d+) tokens > 3000 maximum",
                         body["error"]["message"])
    assert match is not None
    assert int(match.group(1)) > 3500


async def test_openai_chat_rejects_a_prompt_over_the_window(openai_client: AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        await openai_client.chat.completions.create(
            model=TINY.id, messages=[{"role": "user", "content": long_text(3500)}]
        )
    assert error.value.code == "context_length_exceeded"
    assert isinstance(error.value.body, dict)
    assert re.fullmatch(
        r"This model's maximum context length is 3000 tokens\. However, your messages resulted "
        r"in \d+ tokens\. Please reduce the length of the messages\.",
        error.value.body["message"],
    )


async def test_responses_rejects_a_prompt_over_the_window(openai_client: AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        await openai_client.responses.create(model=TINY.id, input=long_text(3500))
    assert error.value.code == "context_length_exceeded"
    assert isinstance(error.value.body, dict)
    assert error.value.body["message"] == (
        "Your input exceeds the context window of this model. Please adjust your input and "
        "try again."
    )


async def test_max_tokens_cuts_the_answer(anthropic_client: AsyncAnthropic,
                                          openai_client: AsyncOpenAI) -> None:
    ask = [{"role": "user", "content": LONG_ANSWER}]
    full = await anthropic_client.messages.create(model="sim-small", max_tokens=1000,
                                                  messages=ask)
    assert full.stop_reason == "end_turn"
    assert full.usage.output_tokens > 400

    cut = await anthropic_client.messages.create(model="sim-small", max_tokens=50,
                                                 messages=ask)
    assert cut.stop_reason == "max_tokens"
    assert cut.usage.output_tokens == 50
    text = cut.content[0].text
    assert count_tokens(text) <= 50
    assert full.content[0].text.startswith(text)

    chat = await openai_client.chat.completions.create(model="sim-small", messages=ask,
                                                       max_completion_tokens=50)
    assert chat.choices[0].finish_reason == "length"
    assert chat.usage is not None
    assert chat.usage.completion_tokens == 50

    response = await openai_client.responses.create(model="sim-small", input=LONG_ANSWER,
                                                    max_output_tokens=50)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"


async def test_a_streamed_cut_off_is_reported_too(anthropic_client: AsyncAnthropic,
                                                  openai_client: AsyncOpenAI) -> None:
    async with anthropic_client.messages.stream(
        model="sim-small", max_tokens=30, messages=[{"role": "user", "content": LONG_ANSWER}]
    ) as stream:
        message = await stream.get_final_message()
    assert message.stop_reason == "max_tokens"

    events = []
    stream_response = await openai_client.responses.create(
        model="sim-small", input=LONG_ANSWER, max_output_tokens=30, stream=True
    )
    async for event in stream_response:
        events.append(event)
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details is not None


async def test_output_past_the_window_stops_at_the_window(anthropic_client: AsyncAnthropic,
                                                          openai_client: AsyncOpenAI) -> None:
    # TINY: 3000-token window, 1000 max output. A 2900-token prompt leaves about 100 tokens.
    padding = long_text(2850)
    messages = [{"role": "user", "content": [{"type": "text", "text": padding},
                                             {"type": "text", "text": LONG_ANSWER}]}]
    message = await anthropic_client.messages.create(model=TINY.id, max_tokens=1000,
                                                     messages=messages)
    assert message.stop_reason == "model_context_window_exceeded"
    usage = message.usage
    prompt = usage.input_tokens + (usage.cache_read_input_tokens or 0) + (
        usage.cache_creation_input_tokens or 0)
    assert prompt + usage.output_tokens == 3000

    chat = await openai_client.chat.completions.create(
        model=TINY.id, max_tokens=1000,
        messages=[{"role": "user", "content": [{"type": "text", "text": padding},
                                               {"type": "text", "text": LONG_ANSWER}]}],
    )
    assert chat.choices[0].finish_reason == "length"
    assert chat.usage is not None
    assert chat.usage.total_tokens == 3000

    response = await openai_client.responses.create(
        model=TINY.id, max_output_tokens=1000,
        input=[{"role": "user", "content": [{"type": "input_text", "text": padding},
                                            {"type": "input_text", "text": LONG_ANSWER}]}],
    )
    assert response.status == "incomplete"
    assert response.usage is not None
    assert response.usage.total_tokens == 3000


@pytest.mark.parametrize("api", ["anthropic", "chat", "responses"])
async def test_the_overflow_fault_forces_the_real_rejection(
    simulator: Simulator, anthropic_client: AsyncAnthropic, openai_client: AsyncOpenAI, api: str
) -> None:
    simulator.set_faults("overflow@1")
    if api == "anthropic":
        with pytest.raises(anthropic.BadRequestError) as a_error:
            await anthropic_client.messages.create(
                model="sim-small", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        assert re.fullmatch(r"prompt is too long: \d+ tokens > 32768 maximum",
                            a_error.value.body["error"]["message"])
    elif api == "chat":
        with pytest.raises(openai.BadRequestError) as chat_error:
            await openai_client.chat.completions.create(
                model="sim-small", messages=[{"role": "user", "content": "hi"}])
        assert chat_error.value.code == "context_length_exceeded"
    else:
        with pytest.raises(openai.BadRequestError) as responses_error:
            await openai_client.responses.create(model="sim-small", input="hi")
        assert responses_error.value.code == "context_length_exceeded"
    assert simulator.records[-1].fault == "overflow"
    # Only the first request was faulted.
    await anthropic_client.messages.create(
        model="sim-small", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert simulator.records[-1].status == 200
