"""The OpenAI providers (Chat Completions and Responses) against the simulator."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from agent_server.llm.messages import Message, ThinkingContent
from agent_server.llm.models import ModelRegistry
from agent_server.llm.openai_chat import OpenAIChatProvider
from agent_server.llm.openai_client import OpenAIClientProvider
from agent_server.llm.openai_responses import OpenAIResponsesProvider
from agent_server.llm.stream import CallOptions, Provider
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.llm.sim_driver import (
    SCENARIO,
    SESSION,
    assert_prefix_grows,
    body_json,
    models_built,
    reversed_arguments,
    run_turn,
)

MODEL = ModelRegistry().require("sim-large")
OPTIONS = CallOptions(session_id=SESSION)
APIS = {"openai-chat": OpenAIChatProvider, "openai-responses": OpenAIResponsesProvider}
MESSAGES_KEY = {"openai-chat": "messages", "openai-responses": "input"}


@pytest.fixture(params=sorted(APIS))
async def sim(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[Simulator, OpenAIClientProvider]]:
    simulator = Simulator(scenario=SCENARIO)
    async with SimServer(simulator) as server:
        provider = APIS[request.param]("sim-key", server.base_url + "/v1")
        try:
            yield simulator, provider
        finally:
            await provider.aclose()


def bodies(simulator: Simulator, api: str) -> list[dict[str, Any]]:
    return [record.request for record in simulator.records if record.api == api]


async def test_requests_carry_the_session_cache_key_and_usage_reports_cached_tokens(
    sim: tuple[Simulator, OpenAIClientProvider],
) -> None:
    simulator, provider = sim
    api = provider.api  # type: ignore[attr-defined]
    history: list[Message] = []
    first = await run_turn(provider, MODEL, history, "Investigate the failing test", OPTIONS)  # type: ignore[arg-type]
    second = await run_turn(provider, MODEL, history, "Fix it", OPTIONS)  # type: ignore[arg-type]
    sent = bodies(simulator, api)
    assert len(sent) == 5
    assert all(body["prompt_cache_key"] == SESSION for body in sent)
    assert all("prompt_cache_retention" not in body for body in sent)
    if api == "openai-responses":
        assert all(body["store"] is False for body in sent)
    else:
        assert all(body["stream_options"] == {"include_usage": True} for body in sent)
    # Turn 2 reads almost all of its prefix from the cache, as does the call after the
    # 15 parallel tool calls.
    for answer in (second[0], first[2]):
        assert answer.usage is not None
        assert answer.usage.cache_read / answer.usage.prompt_tokens >= 0.9
    # Normalised usage is the simulator's account: input excludes the cached tokens.
    records = [r for r in simulator.records if r.api == api]
    for answer, record in zip([*first, *second], records, strict=True):
        assert answer.usage is not None
        assert record.tokens is not None
        assert (answer.usage.input, answer.usage.cache_read, answer.usage.output) == (
            record.tokens.input,
            record.tokens.cache_read,
            record.tokens.output,
        )
        by_hand = (
            record.tokens.input * 3.0
            + record.tokens.cache_read * 0.30
            + record.tokens.output * 15.0
        ) / 1e6
        assert answer.usage.cost.total == pytest.approx(by_hand)
        assert answer.api == api


async def test_request_prefix_is_byte_identical_across_turns(
    sim: tuple[Simulator, OpenAIClientProvider],
) -> None:
    simulator, provider = sim
    api = provider.api  # type: ignore[attr-defined]
    history: list[Message] = []
    await run_turn(provider, MODEL, history, "Investigate the failing test", OPTIONS)  # type: ignore[arg-type]
    await run_turn(provider, MODEL, history, "Fix it", OPTIONS)  # type: ignore[arg-type]
    assert_prefix_grows(bodies(simulator, api), MESSAGES_KEY[api])


@pytest.mark.parametrize("api", sorted(APIS))
async def test_argument_key_order_does_not_change_the_bytes(api: str) -> None:
    logs = []
    for rewrite in (None, reversed_arguments):
        simulator = Simulator(scenario=SCENARIO)
        async with SimServer(simulator) as server:
            provider: Provider = APIS[api]("sim-key", server.base_url + "/v1")
            history: list[Message] = []
            await run_turn(
                provider, MODEL, history, "Investigate the failing test", OPTIONS, rewrite=rewrite
            )
            await provider.aclose()
            logs.append([body_json(record.request) for record in simulator.records])
    assert len(logs[0]) == 3
    assert logs[0] == logs[1]


@pytest.mark.parametrize("api", sorted(APIS))
async def test_long_retention_asks_for_24_hours(api: str) -> None:
    simulator = Simulator(scenario=SCENARIO)
    async with SimServer(simulator) as server:
        provider: Provider = APIS[api]("sim-key", server.base_url + "/v1")
        history: list[Message] = []
        await run_turn(
            provider,
            MODEL,
            history,
            "Investigate the failing test",
            replace(OPTIONS, cache_retention="long"),
        )
        await provider.aclose()
    assert all(record.request["prompt_cache_retention"] == "24h" for record in simulator.records)


async def test_responses_reasoning_items_are_sent_back_inline() -> None:
    reasoner = replace(MODEL, id="sim-reasoner", name="Simulator with reasoning", reasoning=True)
    scenario = parse_scenario(
        {
            "turns": [
                {
                    "user": "Think, then look",
                    "steps": [
                        {
                            "thinking": "The test fails on import.",
                            "text": "Looking.",
                            "tools": [{"name": "read", "arguments": {"path": "a.py"}}],
                        },
                        {"thinking": "Now I know.", "text": "Done."},
                    ],
                }
            ]
        }
    )
    simulator = Simulator(scenario=scenario, models=[reasoner])
    async with SimServer(simulator) as server:
        provider = OpenAIResponsesProvider("sim-key", server.base_url + "/v1")
        history: list[Message] = []
        answers = await run_turn(provider, reasoner, history, "Think, then look", OPTIONS)
        await provider.aclose()
    thinking = [b for b in answers[0].content if isinstance(b, ThinkingContent)]
    assert len(thinking) == 1
    assert thinking[0].signature
    assert thinking[0].thinking == "The test fails on import."
    item = json.loads(thinking[0].signature)
    assert item["type"] == "reasoning"
    assert item["encrypted_content"]
    first, second = (record.request for record in simulator.records)
    assert first["include"] == ["reasoning.encrypted_content"]
    assert item in second["input"]
    assert second["input"].index(item) == 1  # right after the prompt, before the tool call


@pytest.mark.parametrize(
    ("api", "retention", "write_price"),
    [
        ("openai-chat", "short", 2.50),
        ("openai-chat", "long", 2.50),  # Chat Completions: 30 minutes whatever is asked
        ("openai-responses", "short", 2.50),
        ("openai-responses", "long", 5.00),  # 12 hours
    ],
)
async def test_cache_writes_of_gpt_5_6_and_later_are_billed(
    api: str, retention: str, write_price: float
) -> None:
    """The simulator refuses prompt_cache_retention with prompt_cache_options and reports
    writes for the models that bill them: a whole session runs, and writes cost 1.25x input
    (the 30-minute TTL) or the extended write price (12 hours, Responses only)."""
    writer = ModelRegistry().require("gpt-6.2-sol")
    simulator = Simulator(scenario=SCENARIO)
    async with SimServer(simulator) as server:
        provider: Provider = APIS[api]("sim-key", server.base_url + "/v1")
        history: list[Message] = []
        options = replace(OPTIONS, cache_retention=retention)  # type: ignore[arg-type]
        answers = await run_turn(provider, writer, history, "Investigate the failing test", options)
        await provider.aclose()
    assert all(record.status == 200 for record in simulator.records)
    assert all("prompt_cache_retention" not in record.request for record in simulator.records)
    usages = [answer.usage for answer in answers]
    assert all(usage is not None for usage in usages)
    writes = sum(usage.cache_write for usage in usages if usage is not None)
    reads = sum(usage.cache_read for usage in usages if usage is not None)
    assert writes > 0
    assert reads > 0  # each call reads what the one before wrote
    assert writer.pricing.cache_write_5m == pytest.approx(writer.pricing.input * 1.25)
    for usage in usages:
        assert usage is not None
        assert usage.cost.cache_write == pytest.approx(usage.cache_write * write_price / 1e6)


async def test_stream_events_reach_the_translator_as_json_not_sdk_models(
    sim: tuple[Simulator, OpenAIClientProvider], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK makes the request and decodes the server-sent events, but builds no typed
    model per event (most of a long answer's relay cost, issue 31)."""
    import openai._base_client

    built = models_built(monkeypatch, openai._base_client)
    _, provider = sim
    answers = await run_turn(provider, MODEL, [], "Investigate the failing test", OPTIONS)
    assert answers[-1].stop_reason == "stop" and len(answers) > 1
    assert built == []
