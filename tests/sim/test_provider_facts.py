"""What the real APIs refuse and report that the simulator must too: Anthropic's TTL order and
trailing whitespace after a paused turn, OpenAI's caching fields from GPT-5.6 on and their
billed writes, a turn the API pauses, a request too large for the rate limit."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agent_server.sim.simulator import Simulator
from tests.sim.builders import FakeClock, anthropic_tools, long_text

FIVE_MINUTES = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}
ORDER_ERROR = "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"
WRITER = "gpt-6.2-sol"  # GPT-5.6 and later: takes prompt_cache_options, bills cache writes
OLDER = "gpt-5.5"


def marked(text: str, control: dict[str, str]) -> dict[str, Any]:
    return {"type": "text", "text": text, "cache_control": control}


async def messages_call(client: AsyncAnthropic, **request: Any) -> anthropic.types.Message:
    request.setdefault("model", "sim-small")
    request.setdefault("max_tokens", 50)
    request.setdefault("messages", [{"role": "user", "content": "hello"}])
    return await client.messages.create(**request)


# --- Anthropic: a 1-hour breakpoint never after a 5-minute one ------------------------------


@pytest.mark.parametrize(
    ("request_parts", "where"),
    [
        # tools come before system
        ({"tools": "5m", "system": "1h"}, "system.0.cache_control.ttl"),
        ({"system": "5m", "message": "1h"}, "messages.0.content.0.cache_control.ttl"),
        ({"message": "5m", "result": "1h"}, "messages.2.content.0.content.0.cache_control.ttl"),
    ],
)
async def test_a_1h_breakpoint_after_a_5m_one_is_refused(
    anthropic_client: AsyncAnthropic, request_parts: dict[str, str], where: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as raised:
        await messages_call(anthropic_client, **ordered_request(request_parts))
    assert raised.value.status_code == 400
    assert f"{where}: {ORDER_ERROR}" in str(raised.value)
    assert "`tools`, `system`, `messages`" in str(raised.value)


@pytest.mark.parametrize(
    "request_parts",
    [
        {"tools": "1h", "system": "5m", "message": "5m"},
        {"tools": "1h", "system": "1h", "message": "1h", "result": "1h"},
        {"system": "5m", "message": "5m", "result": "5m"},
        {"message": "1h", "result": "5m"},
    ],
)
async def test_1h_before_5m_and_one_ttl_throughout_are_accepted(
    anthropic_client: AsyncAnthropic, request_parts: dict[str, str]
) -> None:
    message = await messages_call(anthropic_client, **ordered_request(request_parts))
    assert message.usage.cache_creation_input_tokens is not None


def ordered_request(parts: dict[str, str]) -> dict[str, Any]:
    """A request with breakpoints of the given TTLs on the last tool, the system prompt, the
    first user message and a tool result's content."""

    def control(part: str) -> dict[str, str] | None:
        ttl = parts.get(part)
        return None if ttl is None else (HOUR if ttl == "1h" else FIVE_MINUTES)

    tools = anthropic_tools(("ls", "read"))
    if control("tools"):
        tools[-1]["cache_control"] = control("tools")
    system: dict[str, Any] = {"type": "text", "text": long_text(1200)}
    if control("system"):
        system["cache_control"] = control("system")
    first: dict[str, Any] = {"type": "text", "text": "List the files."}
    if control("message"):
        first["cache_control"] = control("message")
    result_text: dict[str, Any] = {"type": "text", "text": "a.py b.py"}
    if control("result"):
        result_text["cache_control"] = control("result")
    return {
        "tools": tools,
        "system": [system],
        "messages": [
            {"role": "user", "content": [first]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [result_text]}]},
        ],
    }


# --- Anthropic: a request that ends with an assistant message --------------------------------


async def test_a_final_assistant_text_may_not_end_in_whitespace(
    anthropic_client: AsyncAnthropic,
) -> None:
    question = {"role": "user", "content": "hello"}
    with pytest.raises(anthropic.BadRequestError, match="final assistant content cannot end "
                       "with trailing whitespace"):
        await messages_call(anthropic_client, messages=[
            question, {"role": "assistant", "content": [{"type": "text", "text": "Let me see.\n"}]}])
    answer = await messages_call(anthropic_client, messages=[
        question, {"role": "assistant", "content": [{"type": "text", "text": "Let me see."}]}])
    assert answer.stop_reason == "end_turn"


# --- OpenAI: prompt_cache_options and billed writes from GPT-5.6 on --------------------------


async def chat_usage(client: AsyncOpenAI, model: str, prompt: str, **fields: Any) -> Any:
    completion = await client.chat.completions.create(
        model=model, max_completion_tokens=20, prompt_cache_key="session-1",
        messages=[{"role": "system", "content": prompt}, {"role": "user", "content": "hello"}],
        **fields,
    )
    assert completion.usage is not None
    assert completion.usage.prompt_tokens_details is not None
    return completion.usage


async def test_gpt_5_6_and_later_report_cache_writes(openai_client: AsyncOpenAI) -> None:
    prompt = long_text(3000)
    options = {"prompt_cache_options": {"ttl": "30m"}}
    first = await chat_usage(openai_client, WRITER, prompt, **options)
    second = await chat_usage(openai_client, WRITER, prompt, **options)
    first_details, second_details = first.prompt_tokens_details, second.prompt_tokens_details
    # The first call writes its whole prompt; the second reads it and writes nothing.
    assert first_details.cached_tokens == 0
    assert first_details.cache_write_tokens == first.prompt_tokens > 3000
    assert second_details.cached_tokens == first.prompt_tokens // 128 * 128
    assert second_details.cache_write_tokens == 0


async def test_an_implicit_breakpoint_caches_the_whole_prompt_only(
    openai_client: AsyncOpenAI,
) -> None:
    """GPT-5.6 writes one entry, at the end of the prompt: a request that shares only the
    system prompt with it reads nothing, unlike the older models' automatic caching."""
    prompt = long_text(3000)
    await chat_usage(openai_client, WRITER, prompt)
    other = await openai_client.chat.completions.create(
        model=WRITER, max_completion_tokens=20, prompt_cache_key="session-1",
        messages=[{"role": "system", "content": prompt}, {"role": "user", "content": "bye"}],
    )
    assert other.usage is not None and other.usage.prompt_tokens_details is not None
    assert other.usage.prompt_tokens_details.cached_tokens == 0
    assert other.usage.prompt_tokens_details.cache_write_tokens == other.usage.prompt_tokens


async def test_older_models_report_no_writes(openai_client: AsyncOpenAI) -> None:
    prompt = long_text(3000)
    first = await chat_usage(openai_client, OLDER, prompt, prompt_cache_retention="24h")
    second = await chat_usage(openai_client, OLDER, prompt, prompt_cache_retention="24h")
    assert first.prompt_tokens_details.cache_write_tokens == 0
    assert second.prompt_tokens_details.cached_tokens > 2000


async def test_the_30_minute_ttl(openai_client: AsyncOpenAI, clock: FakeClock) -> None:
    prompt = long_text(3000)
    await chat_usage(openai_client, WRITER, prompt)
    clock.advance(29 * 60)
    assert (await chat_usage(openai_client, WRITER, prompt)).prompt_tokens_details.cached_tokens
    clock.advance(31 * 60)
    expired = await chat_usage(openai_client, WRITER, prompt)
    assert expired.prompt_tokens_details.cached_tokens == 0
    assert expired.prompt_tokens_details.cache_write_tokens == expired.prompt_tokens


async def test_responses_take_a_12_hour_ttl_and_split_writes_by_it(
    openai_client: AsyncOpenAI, clock: FakeClock
) -> None:
    request: dict[str, Any] = {"model": WRITER, "instructions": long_text(2500), "input": "hi",
                               "prompt_cache_key": "s1", "prompt_cache_options": {"ttl": "12h"}}
    first = await openai_client.responses.create(**request)
    assert first.usage is not None
    details = first.usage.input_tokens_details
    assert details.cache_write_tokens == first.usage.input_tokens
    assert details.cache_write_tokens_details is not None
    assert details.cache_write_tokens_details.ttl_12h_tokens == details.cache_write_tokens
    assert details.cache_write_tokens_details.ttl_30m_tokens == 0
    clock.advance(11 * 3600)
    second = await openai_client.responses.create(**request)
    assert second.usage is not None
    assert second.usage.input_tokens_details.cached_tokens > 2000


async def test_explicit_mode_without_breakpoints_caches_nothing(
    openai_client: AsyncOpenAI,
) -> None:
    prompt = long_text(3000)
    explicit = {"prompt_cache_options": {"mode": "explicit"}}
    for _ in range(2):
        usage = await chat_usage(openai_client, WRITER, prompt, **explicit)
        assert usage.prompt_tokens_details.cached_tokens == 0
        assert usage.prompt_tokens_details.cache_write_tokens == 0


@pytest.mark.parametrize(
    ("model", "fields", "message"),
    [
        (WRITER, {"prompt_cache_retention": "24h", "prompt_cache_options": {"ttl": "30m"}},
         "'prompt_cache_retention' cannot be used together with 'prompt_cache_options'"),
        (OLDER, {"prompt_cache_options": {"ttl": "30m"}},
         "'prompt_cache_options' is not supported with this model"),
        ("sim-small", {"prompt_cache_options": {}},
         "'prompt_cache_options' is not supported with this model"),
        (WRITER, {"prompt_cache_options": {"ttl": "12h"}},  # Chat Completions: 30m only
         "Invalid value: '12h'. Supported values are: '30m'."),
        (WRITER, {"prompt_cache_options": {"mode": "manual"}}, "Invalid value: 'manual'"),
    ],
)
async def test_cache_fields_the_api_refuses(
    openai_client: AsyncOpenAI, model: str, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(openai.BadRequestError, match=message):
        await chat_usage(openai_client, model, "hello", **fields)


async def test_responses_refuse_both_cache_fields_too(openai_client: AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        await openai_client.responses.create(
            model=WRITER, input="hi", prompt_cache_retention="24h",
            prompt_cache_options={"ttl": "12h"},
        )
    assert raised.value.code == "unsupported_parameter"
    assert "prompt_cache_options.ttl" in raised.value.message


# --- faults: a paused turn, a request too large for the rate limit ---------------------------


async def test_a_paused_turn_stops_before_its_tool_calls(
    simulator: Simulator, anthropic_client: AsyncAnthropic
) -> None:
    simulator.set_faults("pause@1")
    request = {"tools": anthropic_tools(), "messages": [
        {"role": "user", "content": "Read the readme please."}]}
    paused = await messages_call(anthropic_client, **request)
    whole = await messages_call(anthropic_client, **request)
    assert paused.stop_reason == "pause_turn"
    assert [block.type for block in paused.content] == ["text"]
    assert whole.stop_reason == "tool_use"
    assert paused.content[0] == whole.content[0]
    assert paused.usage.output_tokens < whole.usage.output_tokens


async def test_a_request_too_large_for_the_rate_limit(
    simulator: Simulator, openai_client: AsyncOpenAI, anthropic_client: AsyncAnthropic
) -> None:
    simulator.set_faults("toolarge@1:6000")
    with pytest.raises(openai.RateLimitError) as raised:
        await chat_usage(openai_client, "sim-small", "hello")
    assert raised.value.code == "rate_limit_exceeded"
    assert "Request too large for sim-small" in raised.value.message
    assert "(TPM): Limit 6000, Requested 6001" in raised.value.message
    simulator.set_faults("toolarge@1")
    assert (await messages_call(anthropic_client)).stop_reason == "end_turn"
