"""The Anthropic provider against the simulator, over HTTP, through the official SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_server.llm.anthropic import AnthropicProvider
from agent_server.llm.messages import Message
from agent_server.llm.models import ModelRegistry
from agent_server.llm.stream import CallOptions
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.llm.builders import cache_marks, strip_cache_control
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


@pytest.fixture
async def sim() -> AsyncIterator[tuple[Simulator, AnthropicProvider]]:
    simulator = Simulator(scenario=SCENARIO)
    async with SimServer(simulator) as server:
        provider = AnthropicProvider("sim-key", server.base_url)
        try:
            yield simulator, provider
        finally:
            await provider.aclose()


def bodies(simulator: Simulator) -> list[dict[str, Any]]:
    return [record.request for record in simulator.records if record.api == "anthropic-messages"]


async def test_cache_control_sits_exactly_at_the_breakpoints(
    sim: tuple[Simulator, AnthropicProvider],
) -> None:
    simulator, provider = sim
    history: list[Message] = []
    await run_turn(provider, MODEL, history, "Investigate the failing test", OPTIONS)
    await run_turn(provider, MODEL, history, "Fix it", OPTIONS)
    marks = [cache_marks(body) for body in bodies(simulator)]
    assert marks == [
        # turn 1: the prompt; the bash result; the 15 parallel results (31 blocks after the
        # previous breakpoint: the fourth keeps the bash result's cache entry in reach).
        ["tools[2]", "system[0]", "messages[0][0]"],
        ["tools[2]", "system[0]", "messages[2][0]"],
        ["tools[2]", "system[0]", "messages[2][0]", "messages[4][14]"],
        # turn 2: the new prompt; the edit result.
        ["tools[2]", "system[0]", "messages[6][0]"],
        ["tools[2]", "system[0]", "messages[8][0]"],
    ]
    for body in bodies(simulator):
        assert body_json(body).count('"cache_control"') == len(cache_marks(body))


async def test_turn_two_reads_the_prefix_from_cache(
    sim: tuple[Simulator, AnthropicProvider],
) -> None:
    simulator, provider = sim
    history: list[Message] = []
    first = await run_turn(provider, MODEL, history, "Investigate the failing test", OPTIONS)
    second = await run_turn(provider, MODEL, history, "Fix it", OPTIONS)
    opening = second[0].usage
    assert opening is not None
    assert opening.cache_read / opening.prompt_tokens >= 0.9
    # The call right after the 15 parallel tool calls still reads the earlier prefix.
    after_parallel = first[2].usage
    assert after_parallel is not None
    assert after_parallel.cache_read / after_parallel.prompt_tokens >= 0.9
    # Usage is the simulator's own account of the call.
    records = [r for r in simulator.records if r.api == "anthropic-messages"]
    for answer, record in zip([*first, *second], records, strict=True):
        assert answer.usage is not None
        assert record.tokens is not None
        assert (
            answer.usage.input,
            answer.usage.cache_read,
            answer.usage.cache_write,
            answer.usage.output,
        ) == (
            record.tokens.input,
            record.tokens.cache_read,
            record.tokens.cache_write,
            record.tokens.output,
        )


async def test_without_the_fourth_breakpoint_the_parallel_step_would_miss(
    sim: tuple[Simulator, AnthropicProvider],
) -> None:
    """The control: replaying the same requests without the fourth mark reads far less."""
    simulator, provider = sim
    history: list[Message] = []
    await run_turn(provider, MODEL, history, "Investigate the failing test", OPTIONS)
    sent = bodies(simulator)[:3]
    simulator.reset()
    client = provider.client
    for index, body in enumerate(sent):
        params = dict(body)
        if index == 2:
            params = strip_cache_control(params)
            params["tools"][-1]["cache_control"] = {"type": "ephemeral"}
            params["system"][-1]["cache_control"] = {"type": "ephemeral"}
            params["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        async with await client.messages.create(**params) as stream:
            async for _ in stream:
                pass
    with_fourth = simulator.records[2].tokens
    without_fourth = simulator.records[-1].tokens
    assert with_fourth is not None
    assert without_fourth is not None
    assert with_fourth.cache_read / with_fourth.prompt >= 0.9
    assert without_fourth.cache_read / without_fourth.prompt < 0.5


async def test_request_prefix_is_byte_identical_across_turns(
    sim: tuple[Simulator, AnthropicProvider],
) -> None:
    simulator, provider = sim
    history: list[Message] = []
    await run_turn(provider, MODEL, history, "Investigate the failing test", OPTIONS)
    await run_turn(provider, MODEL, history, "Fix it", OPTIONS)
    assert_prefix_grows([strip_cache_control(body) for body in bodies(simulator)], "messages")


async def test_argument_key_order_does_not_change_the_bytes() -> None:
    logs = []
    for rewrite in (None, reversed_arguments):
        simulator = Simulator(scenario=SCENARIO)
        async with SimServer(simulator) as server:
            provider = AnthropicProvider("sim-key", server.base_url)
            history: list[Message] = []
            await run_turn(
                provider, MODEL, history, "Investigate the failing test", OPTIONS, rewrite=rewrite
            )
            await run_turn(provider, MODEL, history, "Fix it", OPTIONS, rewrite=rewrite)
            await provider.aclose()
            logs.append([body_json(record.request) for record in simulator.records])
    assert len(logs[0]) == 5
    assert logs[0] == logs[1]


async def test_long_retention_marks_one_hour_and_prices_it() -> None:
    simulator = Simulator(scenario=SCENARIO)
    async with SimServer(simulator) as server:
        provider = AnthropicProvider("sim-key", server.base_url)
        history: list[Message] = []
        answers = await run_turn(
            provider,
            MODEL,
            history,
            "Investigate the failing test",
            CallOptions(session_id=SESSION, cache_retention="long"),
        )
        await provider.aclose()
    for body in bodies(simulator):
        assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    usage = answers[0].usage
    record = simulator.records[0].tokens
    assert usage is not None
    assert record is not None
    assert record.cache_write_1h == usage.cache_write > 0
    # By hand: sim-large is $3 in, $15 out, $6 per million 1-hour cache writes, $0.30 reads.
    expected = (
        usage.input * 3 + usage.output * 15 + usage.cache_write * 6 + usage.cache_read * 0.3
    ) / 1e6
    assert usage.cost.total == pytest.approx(expected)
    assert usage.cost.cache_write == pytest.approx(usage.cache_write * 6 / 1e6)


async def test_no_caching_sends_no_marks_and_reads_nothing() -> None:
    simulator = Simulator(scenario=SCENARIO)
    async with SimServer(simulator) as server:
        provider = AnthropicProvider("sim-key", server.base_url)
        history: list[Message] = []
        answers = await run_turn(
            provider,
            MODEL,
            history,
            "Investigate the failing test",
            CallOptions(session_id=SESSION, cache_retention="none"),
        )
        await provider.aclose()
    assert all("cache_control" not in body_json(body) for body in bodies(simulator))
    assert all(
        a.usage is not None and a.usage.cache_read == a.usage.cache_write == 0 for a in answers
    )


async def test_cost_matches_the_hand_computed_bill(
    sim: tuple[Simulator, AnthropicProvider],
) -> None:
    simulator, provider = sim
    history: list[Message] = []
    answers = await run_turn(provider, MODEL, history, "Investigate the failing test", OPTIONS)
    for answer, record in zip(answers, simulator.records, strict=True):
        tokens = record.tokens
        assert answer.usage is not None
        assert tokens is not None
        by_hand = (
            tokens.input * 3.0
            + tokens.output * 15.0
            + tokens.cache_read * 0.30
            + tokens.cache_write_5m * 3.75
            + tokens.cache_write_1h * 6.0
        ) / 1_000_000
        assert answer.usage.cost.total == pytest.approx(by_hand)
        assert answer.model == "sim-large"
        assert answer.api == "anthropic-messages"


async def test_stream_events_reach_the_translator_as_json_not_sdk_models(
    sim: tuple[Simulator, AnthropicProvider], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK makes the request and decodes the server-sent events, but builds no typed
    model per event (most of a long answer's relay cost, issue 31)."""
    import anthropic._base_client

    built = models_built(monkeypatch, anthropic._base_client)
    _, provider = sim
    answers = await run_turn(provider, MODEL, [], "Investigate the failing test", OPTIONS)
    assert answers[-1].stop_reason == "stop" and len(answers) > 1
    assert built == []
