"""Fixtures for the simulator's tests: a fake clock, a Simulator, a real server on a free port,
and the official SDK clients pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.sim.builders import TEST_SCENARIO, THINKER, TINY, FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def simulator(clock: FakeClock) -> Simulator:
    return Simulator(clock=clock, scenario=TEST_SCENARIO, models=[TINY, THINKER])


@pytest.fixture
async def server(simulator: Simulator) -> AsyncIterator[SimServer]:
    async with SimServer(simulator) as running:
        yield running


@pytest.fixture
async def anthropic_client(server: SimServer) -> AsyncIterator[AsyncAnthropic]:
    client = AsyncAnthropic(base_url=server.base_url, api_key="sim-test-key", max_retries=0)
    yield client
    await client.close()


@pytest.fixture
async def openai_client(server: SimServer) -> AsyncIterator[AsyncOpenAI]:
    client = AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sim-test-key", max_retries=0)
    yield client
    await client.close()
