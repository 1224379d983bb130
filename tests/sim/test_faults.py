"""Fault injection: the spec grammar, and the faults as the SDKs see them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import httpx2
import openai
import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agent_server.sim.faults import FaultInjector, FaultRule, FaultSpecError, parse_faults
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator

HI = [{"role": "user", "content": "Write a long answer."}]


def test_the_spec_grammar() -> None:
    plan = parse_faults("429@3, drop@5:2, slow@2:1.5, 500%0.1, 529@7-9, overflow@4, seed=7")
    assert plan.seed == 7
    assert plan.rules == (
        FaultRule("429", first=3, last=3, param=1.0),
        FaultRule("drop", first=5, last=5, param=2.0),
        FaultRule("slow", first=2, last=2, param=1.5),
        FaultRule("500", rate=0.1),
        FaultRule("529", first=7, last=9),
        FaultRule("overflow", first=4, last=4),
    )
    assert parse_faults(plan.spec) == plan
    assert parse_faults("") == parse_faults(None)


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("418@1", "unknown fault '418'"),
        ("429", "cannot read '429'"),
        ("slow@2", "needs a delay"),
        ("500%1.5", "within 0..1"),
        ("429@0", "start at 1"),
        ("seed=x", "seed must be an integer"),
    ],
)
def test_bad_specs_are_explained(spec: str, problem: str) -> None:
    with pytest.raises(FaultSpecError, match=problem):
        parse_faults(spec)


def test_decisions_by_index_and_by_seeded_rate() -> None:
    injector = FaultInjector(parse_faults("429@2,slow@2:0.5,drop@3-4"))
    decisions = [injector.next_request() for _ in range(5)]
    assert [d.describe() for d in decisions] == [None, "slow:0.5,429:1", "drop:3", "drop:3", None]

    def draw(seed: int) -> list[str | None]:
        rate = FaultInjector(parse_faults(f"500%0.3,seed={seed}"))
        return [rate.next_request().describe() for _ in range(200)]

    assert draw(1) == draw(1)
    assert draw(1) != draw(2)
    assert 30 < draw(1).count("500") < 90


@pytest.fixture
async def retrying(server: SimServer) -> AsyncIterator[tuple[AsyncAnthropic, AsyncOpenAI]]:
    claude = AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=2)
    gpt = AsyncOpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=2)
    yield claude, gpt
    await claude.close()
    await gpt.close()


@pytest.mark.parametrize(("spec", "anthropic_status", "openai_status"),
                         [("429@1:0.01", 429, 429), ("529@1:0.01", 529, 503),
                          ("500@1:0.01", 500, 500)])
async def test_the_sdks_retry_errors_and_succeed(
    simulator: Simulator, retrying: tuple[AsyncAnthropic, AsyncOpenAI], spec: str,
    anthropic_status: int, openai_status: int,
) -> None:
    claude, gpt = retrying
    simulator.set_faults(spec)
    message = await claude.messages.create(model="sim-small", max_tokens=50, messages=HI)
    assert message.stop_reason == "max_tokens"
    assert [r.status for r in simulator.records[-2:]] == [anthropic_status, 200]
    assert simulator.records[-2].fault is not None

    simulator.set_faults(spec)
    completion = await gpt.chat.completions.create(model="sim-small", messages=HI, max_tokens=50)
    assert completion.choices[0].finish_reason == "length"
    assert [r.status for r in simulator.records[-2:]] == [openai_status, 200]


async def test_error_bodies_are_the_providers(server: SimServer, simulator: Simulator) -> None:
    simulator.set_faults("429@1:2,529@2,500@3,529@4")
    async with httpx2.AsyncClient() as client:
        headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
        body = {"model": "sim-small", "max_tokens": 10, "messages": HI}
        limited = await client.post(f"{server.base_url}/v1/messages", json=body, headers=headers)
        overloaded = await client.post(f"{server.base_url}/v1/messages", json=body,
                                       headers=headers)
        broken = await client.post(f"{server.base_url}/v1/messages", json=body, headers=headers)
        busy = await client.post(f"{server.base_url}/v1/chat/completions",
                                 json={"model": "sim-small", "messages": HI},
                                 headers={"authorization": "Bearer k"})
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["type"] == "rate_limit_error"
    assert overloaded.status_code == 529
    assert overloaded.json()["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert broken.status_code == 500
    assert broken.json()["error"]["type"] == "api_error"
    assert busy.status_code == 503
    assert busy.json()["error"]["type"] == "server_error"


async def test_openai_rate_limit_body(server: SimServer, simulator: Simulator) -> None:
    simulator.set_faults("429@1")
    client = AsyncOpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.RateLimitError) as error:
        await client.chat.completions.create(model="sim-small", messages=HI)
    assert error.value.code == "rate_limit_exceeded"
    assert error.value.response.headers["retry-after"] == "1"
    await client.close()


async def test_a_dropped_anthropic_stream_raises_in_the_client(
    simulator: Simulator, retrying: tuple[AsyncAnthropic, AsyncOpenAI]
) -> None:
    claude, _ = retrying
    simulator.set_faults("drop@1:4")
    received: list[str] = []

    async def consume() -> None:
        async with claude.messages.stream(model="sim-small", max_tokens=1000,
                                          messages=HI) as stream:
            async for event in stream:
                received.append(event.type)

    with pytest.raises((anthropic.APIConnectionError, httpx2.HTTPError)):
        await consume()
    assert received  # it started...
    assert "message_stop" not in received  # ...and never ended cleanly
    assert simulator.records[-1].fault == "drop:4"


async def test_a_dropped_openai_stream_raises_in_the_client(
    simulator: Simulator, retrying: tuple[AsyncAnthropic, AsyncOpenAI]
) -> None:
    _, gpt = retrying

    async def chat() -> None:
        stream = await gpt.chat.completions.create(model="sim-small", messages=HI,
                                                   stream=True)
        async for _ in stream:
            pass

    async def responses() -> None:
        events = await gpt.responses.create(model="sim-small", input="hi", stream=True)
        async for _ in events:
            pass

    for consume in (chat, responses):
        simulator.set_faults("drop@1")
        with pytest.raises((openai.APIConnectionError, httpx2.HTTPError)):
            await consume()
        assert simulator.records[-1].fault == "drop:3"


async def test_a_dropped_plain_response_is_retried_by_the_sdk(
    simulator: Simulator, retrying: tuple[AsyncAnthropic, AsyncOpenAI]
) -> None:
    claude, gpt = retrying
    simulator.set_faults("drop@1")
    message = await claude.messages.create(model="sim-small", max_tokens=50, messages=HI)
    assert message.stop_reason == "max_tokens"
    assert [r.fault for r in simulator.records[-2:]] == ["drop:3", None]
    simulator.set_faults("drop@1")
    completion = await gpt.chat.completions.create(model="sim-small", messages=HI, max_tokens=50)
    assert completion.choices[0].finish_reason == "length"


async def test_a_slow_first_byte_still_answers(simulator: Simulator,
                                               anthropic_client: AsyncAnthropic) -> None:
    simulator.set_faults("slow@1:0.2")
    message = await anthropic_client.messages.create(model="sim-small", max_tokens=20,
                                                     messages=HI)
    assert message.usage.output_tokens == 20
    assert simulator.records[-1].fault == "slow:0.2"


async def test_faults_can_be_set_over_http(server: SimServer, simulator: Simulator,
                                           anthropic_client: AsyncAnthropic) -> None:
    async with httpx2.AsyncClient() as client:
        answer = await client.post(f"{server.base_url}/_sim/faults", json={"spec": "529@1"})
        assert answer.json() == {"spec": "529@1"}
        refused = await client.post(f"{server.base_url}/_sim/faults", json={"spec": "nope@1"})
        assert refused.status_code == 400
        assert "unknown fault" in refused.json()["error"]
    with pytest.raises(anthropic.InternalServerError) as error:
        await anthropic_client.messages.create(model="sim-small", max_tokens=20, messages=HI)
    assert error.value.status_code == 529
    await anthropic_client.messages.create(model="sim-small", max_tokens=20, messages=HI)
