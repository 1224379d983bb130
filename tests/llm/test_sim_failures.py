"""Failures against the simulator: each fault becomes the right error; cancellation closes
the connection."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

import pytest

from agent_server.errors import (
    ContextOverflowError,
    ModelNotFoundError,
    OverloadedError,
    ProviderConnectionError,
    ProviderError,
    ProviderServerError,
    RateLimitError,
)
from agent_server.llm.anthropic import AnthropicProvider
from agent_server.llm.messages import Context
from agent_server.llm.models import ModelRegistry
from agent_server.llm.openai_chat import OpenAIChatProvider
from agent_server.llm.openai_responses import OpenAIResponsesProvider
from agent_server.llm.overflow import is_context_overflow
from agent_server.llm.stream import CallOptions, Provider, TextDelta
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.llm.builders import user
from tests.llm.sim_driver import SCENARIO, SESSION, call_model

MODEL = ModelRegistry().require("sim-large")
OPTIONS = CallOptions(session_id=SESSION)

ProviderFactory = Callable[[str], Provider]
PROVIDERS: dict[str, ProviderFactory] = {
    "anthropic": lambda base: AnthropicProvider("sim-key", base),
    "openai-chat": lambda base: OpenAIChatProvider("sim-key", base + "/v1"),
    "openai-responses": lambda base: OpenAIResponsesProvider("sim-key", base + "/v1"),
}


@pytest.mark.parametrize("api", sorted(PROVIDERS))
@pytest.mark.parametrize(
    ("fault", "expected", "retryable"),
    [
        ("429@1:3", RateLimitError, True),
        ("529@1", OverloadedError, True),
        ("500@1", ProviderServerError, True),
        ("drop@1:4", ProviderConnectionError, True),
        ("overflow@1", ContextOverflowError, False),
    ],
)
async def test_faults_become_provider_errors(
    api: str, fault: str, expected: type[ProviderError], retryable: bool
) -> None:
    simulator = Simulator(scenario=SCENARIO, faults=fault)
    async with SimServer(simulator) as server:
        provider = PROVIDERS[api](server.base_url)
        try:
            with pytest.raises(ProviderError) as raised:
                await call_model(provider, MODEL, [user("Investigate the failing test")], OPTIONS)
            # The fault is spent: the same call now succeeds.
            answer = await call_model(
                provider, MODEL, [user("Investigate the failing test")], OPTIONS
            )
        finally:
            await provider.aclose()
    error = raised.value
    assert type(error) is expected
    assert error.retryable is retryable
    assert is_context_overflow(error) is (expected is ContextOverflowError)
    assert "sim-key" not in error.message
    if expected is RateLimitError:
        assert error.retry_after == 3.0
        assert error.status == 429
    assert answer.stop_reason == "toolUse"


@pytest.mark.parametrize("api", sorted(PROVIDERS))
async def test_unknown_model(api: str) -> None:
    missing = replace(MODEL, id="sim-nonexistent")
    async with SimServer(Simulator(scenario=SCENARIO)) as server:
        provider = PROVIDERS[api](server.base_url)
        try:
            with pytest.raises(ModelNotFoundError, match="sim-nonexistent") as raised:
                await call_model(provider, missing, [user("hello")], OPTIONS)
        finally:
            await provider.aclose()
    assert not raised.value.retryable
    assert "'model' setting" in raised.value.message


async def test_a_real_overflow_is_classified_from_the_provider_wording() -> None:
    tiny = ModelRegistry().require("sim-small")  # 32k window
    async with SimServer(Simulator(scenario=SCENARIO)) as server:
        provider = PROVIDERS["anthropic"](server.base_url)
        try:
            with pytest.raises(ContextOverflowError, match="prompt is too long"):
                await call_model(provider, tiny, [user("word " * 40_000)], OPTIONS)
        finally:
            await provider.aclose()


@pytest.mark.parametrize("api", sorted(PROVIDERS))
async def test_cancelling_the_consumer_closes_the_connection(api: str) -> None:
    simulator = Simulator(scenario=SCENARIO)
    async with SimServer(simulator) as server:
        provider = PROVIDERS[api](server.base_url)
        connections = server._server.server_state.connections  # type: ignore[union-attr]
        first_text = asyncio.Event()

        async def consume() -> None:
            stream = provider.stream(MODEL, Context("system", (), (user("hello there"),)), OPTIONS)
            async for event in stream:
                if isinstance(event, TextDelta):
                    first_text.set()
                    await asyncio.sleep(3600)  # a slow consumer, cancelled by the user

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first_text.wait(), 60)
        assert len(connections) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The server sees the client hang up (the keep-alive connection would otherwise stay).
        for _ in range(500):
            if not connections:
                break
            await asyncio.sleep(0.01)
        assert not connections
        await provider.aclose()


@pytest.mark.parametrize("api", sorted(PROVIDERS))
async def test_a_finished_stream_keeps_its_connection_for_reuse(api: str) -> None:
    """The counterpart of the cancellation test: a complete answer does not hang up."""
    async with SimServer(Simulator(scenario=SCENARIO)) as server:
        provider = PROVIDERS[api](server.base_url)
        connections = server._server.server_state.connections  # type: ignore[union-attr]
        await call_model(provider, MODEL, [user("hello there")], OPTIONS)
        await asyncio.sleep(0.05)
        assert len(connections) == 1
        await provider.aclose()


@pytest.mark.parametrize("api", sorted(PROVIDERS))
async def test_output_cut_by_max_tokens_is_length(api: str) -> None:
    async with SimServer(Simulator(scenario=SCENARIO)) as server:
        provider = PROVIDERS[api](server.base_url)
        try:
            short = CallOptions(session_id=SESSION, max_tokens=16)
            answer = await call_model(provider, MODEL, [user("hello there")], short)
        finally:
            await provider.aclose()
    assert answer.stop_reason == "length"
    assert answer.usage is not None
    assert answer.usage.output <= 16


async def test_output_cut_by_the_context_window_is_context_overflow() -> None:
    small = ModelRegistry().require("sim-small")  # 32,768 tokens, 4,096 out
    simulator = Simulator(scenario=SCENARIO)
    async with SimServer(simulator) as server:
        provider = PROVIDERS["anthropic"](server.base_url)
        try:
            probes = []
            for words in (1000, 2000):
                probe = [user("word " * words)]
                await call_model(provider, small, probe, CallOptions(max_tokens=16))
                tokens = simulator.records[-1].tokens
                assert tokens is not None
                probes.append(tokens.prompt)
            per_word = (probes[1] - probes[0]) / 1000
            words = 1000 + int((small.context_window - 40 - probes[0]) / per_word)
            answer = await call_model(provider, small, [user("word " * words)], CallOptions())
        finally:
            await provider.aclose()
    assert answer.stop_reason == "contextOverflow"
    assert is_context_overflow(answer)
