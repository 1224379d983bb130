"""Prompt caching, by the providers' documented rules, seen through the SDKs' usage."""

from __future__ import annotations

from typing import Any

from anthropic import AsyncAnthropic
from anthropic.types import Usage
from openai import AsyncOpenAI

from agent_server.llm.models import ModelInfo, Pricing
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.sim.builders import FakeClock, anthropic_tools, long_text

EPHEMERAL = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}
SYSTEM_TOKENS = 2000


def system(text: str = "", control: dict[str, str] | None = EPHEMERAL) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "text", "text": text or long_text(SYSTEM_TOKENS)}
    if control is not None:
        block["cache_control"] = control
    return [block]


async def ask(client: AsyncAnthropic, **request: Any) -> Usage:
    request.setdefault("model", "sim-small")
    request.setdefault("max_tokens", 50)
    request.setdefault("messages", [{"role": "user", "content": "hello"}])
    message = await client.messages.create(**request)
    return message.usage


def read(usage: Usage) -> int:
    return usage.cache_read_input_tokens or 0


def written(usage: Usage) -> int:
    return usage.cache_creation_input_tokens or 0


# --- Anthropic ------------------------------------------------------------------------------


async def test_the_second_identical_request_reads_what_the_first_wrote(
    anthropic_client: AsyncAnthropic,
) -> None:
    first = await ask(anthropic_client, system=system())
    second = await ask(anthropic_client, system=system())
    assert read(first) == 0
    assert written(first) > SYSTEM_TOKENS
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_5m_input_tokens == written(first)
    assert read(second) == written(first)
    assert written(second) == 0
    assert second.input_tokens == first.input_tokens  # the uncached tail after the breakpoint


async def test_a_changed_system_prompt_reads_nothing(anthropic_client: AsyncAnthropic) -> None:
    await ask(anthropic_client, system=system())
    changed = await ask(anthropic_client, system=system(long_text(SYSTEM_TOKENS, "ipsum")))
    assert read(changed) == 0
    assert written(changed) > SYSTEM_TOKENS


async def test_changed_tools_invalidate_the_system_cache(anthropic_client: AsyncAnthropic) -> None:
    await ask(anthropic_client, system=system(), tools=anthropic_tools())
    fewer = await ask(anthropic_client, system=system(), tools=anthropic_tools(("ls", "read")))
    assert read(fewer) == 0


async def test_a_changed_tool_choice_keeps_the_system_but_not_the_messages(
    anthropic_client: AsyncAnthropic,
) -> None:
    messages = [{"role": "user", "content": [
        {"type": "text", "text": long_text(1500, "dolor"), "cache_control": EPHEMERAL}]}]
    tools = anthropic_tools()
    first = await ask(anthropic_client, system=system(), tools=tools, messages=messages)
    again = await ask(anthropic_client, system=system(), tools=tools, messages=messages,
                      tool_choice={"type": "any"})
    assert read(again) > 0
    assert read(again) < read(first) + written(first)  # the system part only
    assert written(again) > 1500


async def test_only_prefixes_of_the_minimum_length_are_cached(anthropic_client: AsyncAnthropic,
                                                               server: SimServer) -> None:
    short = system(long_text(600))
    first = await ask(anthropic_client, system=short)
    second = await ask(anthropic_client, system=short)
    assert (written(first), read(second)) == (0, 0)

    server.simulator.registry.add(
        ModelInfo("test-min-4096", "Opus-like", "sim", 200_000, 8000, Pricing(), 4096)
    )
    medium = system(long_text(3000))
    assert written(await ask(anthropic_client, system=medium)) > 3000  # sim-small: 1024
    strict = await ask(anthropic_client, system=medium, model="test-min-4096")
    assert written(strict) == 0


async def test_the_cache_is_scoped_by_model(anthropic_client: AsyncAnthropic) -> None:
    await ask(anthropic_client, system=system())
    other = await ask(anthropic_client, system=system(), model="sim-large")
    assert read(other) == 0


def many_blocks(count: int, marked: int | None) -> list[dict[str, Any]]:
    """One user message of `count` text blocks, the block at `marked` with cache_control."""
    blocks: list[dict[str, Any]] = []
    for index in range(count):
        block: dict[str, Any] = {"type": "text", "text": f"note number {index}"}
        if index == marked:
            block["cache_control"] = EPHEMERAL
        blocks.append(block)
    return [{"role": "user", "content": blocks}]


async def test_the_lookback_finds_a_cache_point_at_most_20_blocks_back(
    anthropic_client: AsyncAnthropic,
) -> None:
    big = system(control=None)  # long enough to be cacheable, no breakpoint of its own
    await ask(anthropic_client, system=big, messages=many_blocks(40, 5))
    within = await ask(anthropic_client, system=big, messages=many_blocks(40, 25))
    assert read(within) > SYSTEM_TOKENS  # found block 5 from block 25: 20 back

    other = system(long_text(SYSTEM_TOKENS, "ipsum"), control=None)  # a fresh prefix
    await ask(anthropic_client, system=other, messages=many_blocks(40, 10))
    beyond = await ask(anthropic_client, system=other, messages=many_blocks(40, 31))
    assert read(beyond) == 0  # block 10 is 21 back from block 31: missed, all written again
    assert written(beyond) > SYSTEM_TOKENS


async def test_a_fourth_breakpoint_keeps_the_previous_cache_point_reachable(
    anthropic_client: AsyncAnthropic,
) -> None:
    big = system(control=None)
    await ask(anthropic_client, system=big, messages=many_blocks(40, 5))
    blocks = many_blocks(40, 30)
    blocks[0]["content"][12]["cache_control"] = EPHEMERAL  # within 20 of block 5 and of 30
    bridged = await ask(anthropic_client, system=big, messages=blocks)
    assert read(bridged) > SYSTEM_TOKENS


async def test_entries_expire_after_five_minutes_and_reads_refresh_them(
    anthropic_client: AsyncAnthropic, clock: FakeClock,
) -> None:
    await ask(anthropic_client, system=system())
    clock.advance(299)
    assert read(await ask(anthropic_client, system=system())) > 0  # refreshed now
    clock.advance(299)
    assert read(await ask(anthropic_client, system=system())) > 0
    clock.advance(301)
    expired = await ask(anthropic_client, system=system())
    assert read(expired) == 0
    assert written(expired) > SYSTEM_TOKENS


async def test_one_hour_entries_outlive_five_minutes(anthropic_client: AsyncAnthropic,
                                                     clock: FakeClock) -> None:
    first = await ask(anthropic_client, system=system(control=HOUR))
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_1h_input_tokens == written(first) > 0
    clock.advance(3599)
    assert read(await ask(anthropic_client, system=system(control=HOUR))) > 0
    clock.advance(3601)
    assert read(await ask(anthropic_client, system=system(control=HOUR))) == 0


async def test_cache_writes_are_split_by_ttl(anthropic_client: AsyncAnthropic) -> None:
    messages = [{"role": "user", "content": [
        {"type": "text", "text": long_text(500, "dolor"), "cache_control": EPHEMERAL}]}]
    usage = await ask(anthropic_client, system=system(control=HOUR), messages=messages)
    assert usage.cache_creation is not None
    assert usage.cache_creation.ephemeral_1h_input_tokens > SYSTEM_TOKENS
    assert 500 < usage.cache_creation.ephemeral_5m_input_tokens < 520
    assert usage.input_tokens == 0


async def test_a_growing_conversation_reads_the_previous_prefix(
    anthropic_client: AsyncAnthropic,
) -> None:
    turns: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": "Think, then answer.", "cache_control": EPHEMERAL}]}]
    first = await ask(anthropic_client, system=system(), messages=turns)
    turns[0]["content"][0].pop("cache_control")
    turns += [
        {"role": "assistant", "content": "Forty-two."},
        {"role": "user", "content": [{"type": "text", "text": "Why?", "cache_control": EPHEMERAL}]},
    ]
    second = await ask(anthropic_client, system=system(), messages=turns)
    assert read(second) == read(first) + written(first)
    assert 0 < written(second) < 30


# --- OpenAI ---------------------------------------------------------------------------------


def chat(text: str, extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    return [{"role": "system", "content": text}, {"role": "user", "content": "hello"},
            *(extra or [])]


async def cached(client: AsyncOpenAI, messages: list[dict[str, Any]], **options: Any) -> tuple[
    int, int
]:
    completion = await client.chat.completions.create(
        model="sim-small", messages=messages, max_tokens=20, **options
    )
    usage = completion.usage
    assert usage is not None
    assert usage.prompt_tokens_details is not None
    return usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens or 0


async def test_openai_caches_prefixes_in_128_token_steps(openai_client: AsyncOpenAI) -> None:
    messages = chat(long_text(3000))
    prompt, first = await cached(openai_client, messages)
    again, second = await cached(openai_client, messages)
    assert first == 0
    assert again == prompt
    assert second % 128 == 0
    assert prompt - 128 < second <= prompt

    longer = chat(long_text(3000), [{"role": "assistant", "content": "Hi."},
                                     {"role": "user", "content": long_text(700, "ipsum")}])
    _, grown = await cached(openai_client, longer)
    assert grown == second  # the previous request's prefix, floored to 128


async def test_openai_caches_nothing_below_1024_tokens(openai_client: AsyncOpenAI) -> None:
    messages = chat(long_text(900))
    await cached(openai_client, messages)
    assert (await cached(openai_client, messages))[1] == 0


async def test_openai_cache_is_scoped_by_prompt_cache_key(openai_client: AsyncOpenAI) -> None:
    messages = chat(long_text(3000))
    await cached(openai_client, messages, prompt_cache_key="session-a")
    assert (await cached(openai_client, messages, prompt_cache_key="session-b"))[1] == 0
    assert (await cached(openai_client, messages))[1] == 0  # the default scope is another one
    assert (await cached(openai_client, messages, prompt_cache_key="session-a"))[1] > 0


async def test_openai_retention(openai_client: AsyncOpenAI, clock: FakeClock) -> None:
    short, long = chat(long_text(3000)), chat(long_text(3000, "ipsum"))
    await cached(openai_client, short)
    await cached(openai_client, long, prompt_cache_retention="24h")
    clock.advance(11 * 60)
    assert (await cached(openai_client, short))[1] == 0
    clock.advance(5 * 3600)
    assert (await cached(openai_client, long, prompt_cache_retention="24h"))[1] > 0


async def test_responses_report_cached_tokens(openai_client: AsyncOpenAI) -> None:
    request: dict[str, Any] = {"model": "sim-small", "instructions": long_text(2500),
                               "input": "hello", "prompt_cache_key": "s1"}
    first = await openai_client.responses.create(**request)
    second = await openai_client.responses.create(**request)
    assert first.usage is not None
    assert second.usage is not None
    assert first.usage.input_tokens_details.cached_tokens == 0
    cached_tokens = second.usage.input_tokens_details.cached_tokens
    assert cached_tokens > 2000
    assert cached_tokens % 128 == 0


async def test_usage_in_records_adds_up(server: SimServer, anthropic_client: AsyncAnthropic,
                                        simulator: Simulator) -> None:
    await ask(anthropic_client, system=system())
    usage = await ask(anthropic_client, system=system())
    tokens = simulator.records[-1].tokens
    assert tokens is not None
    assert tokens.cache_read == read(usage)
    assert tokens.prompt == usage.input_tokens + read(usage) + written(usage)
