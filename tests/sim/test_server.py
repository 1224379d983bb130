"""The server: malformed input never takes it down, the request log, the threaded and
command-line ways to run it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from anthropic import Anthropic, AsyncAnthropic
from anthropic.types import Message, MessageTokensCount
from anthropic.types import ModelInfo as AnthropicModel
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.sim.builders import FakeClock

ANTHROPIC = {"x-api-key": "sim-test-key", "anthropic-version": "2023-06-01"}
OPENAI = {"authorization": "Bearer sim-test-key"}
GOOD = {"model": "sim-small", "max_tokens": 200, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("path", "headers", "body", "fragment"),
    [
        ("/v1/messages", ANTHROPIC, b'{"model": ', "The request body is not valid JSON"),
        ("/v1/messages", ANTHROPIC, b"\xff\xfe", "The request body is not valid JSON"),
        ("/v1/messages", ANTHROPIC, b"[1, 2]", "must be a JSON object"),
        ("/v1/messages", ANTHROPIC, b'{"model": 5, "max_tokens": 1, "messages": []}',
         "model: Input should be a valid string"),
        ("/v1/messages", ANTHROPIC,
         b'{"model": "sim-small", "max_tokens": 9, "messages": [{"role": "user", "content": 7}]}',
         "messages.0.content: Input should be a valid list"),
        ("/v1/messages", ANTHROPIC,
         b'{"model": "sim-small", "max_tokens": 9, "messages": [{"role": "user", "content": '
         b'[{"type": "tool_result"}]}]}',
         "messages.0.content.0.tool_use_id: Field required"),
        ("/v1/messages/count_tokens", ANTHROPIC, b"nope", "The request body is not valid JSON"),
        ("/v1/chat/completions", OPENAI, b"{", "We could not parse the JSON body"),
        ("/v1/chat/completions", OPENAI, b'{"model": "sim-small", "messages": [1]}',
         "Invalid type for 'messages[0]': expected an object, but got an integer instead."),
        ("/v1/chat/completions", OPENAI, b'{"model": "sim-small"}',
         "Missing required parameter: 'messages'."),
        ("/v1/responses", OPENAI, b'{"model": "sim-small", "input": 3}',
         "Invalid type for 'input'"),
        ("/v1/responses", OPENAI, b'{"model": "sim-small", "input": [{"type": "bogus"}]}',
         "Invalid value: 'bogus'"),
    ],
)
async def test_malformed_bodies_get_a_400_and_the_server_keeps_serving(
    server: SimServer, path: str, headers: dict[str, str], body: bytes, fragment: str
) -> None:
    async with httpx2.AsyncClient() as client:
        response = await client.post(server.base_url + path, content=body,
                                     headers={**headers, "content-type": "application/json"})
        assert response.status_code == 400
        error = response.json()["error"]
        assert fragment in error["message"]
        assert error["type"] == "invalid_request_error"
        after = await client.post(server.base_url + "/v1/messages", json=GOOD, headers=ANTHROPIC)
        assert after.status_code == 200


async def test_unknown_routes_are_json_404s(server: SimServer) -> None:
    async with httpx2.AsyncClient() as client:
        claude = await client.get(server.base_url + "/v1/nothing", headers=ANTHROPIC)
        gpt = await client.get(server.base_url + "/v1/nothing", headers=OPENAI)
        wrong_method = await client.get(server.base_url + "/v1/messages", headers=ANTHROPIC)
    assert claude.status_code == 404
    assert claude.json()["error"]["type"] == "not_found_error"
    assert gpt.status_code == 404
    assert "error" in gpt.json()
    assert "message" in gpt.json()["error"]
    assert wrong_method.status_code == 405


async def test_unrouted_requests_are_in_the_log_and_query_strings_are_ignored(
    server: SimServer, simulator: Simulator
) -> None:
    async with httpx2.AsyncClient() as client:
        head = await client.head(server.base_url + "/", headers=ANTHROPIC)  # as Claude Code does
        beta = await client.post(server.base_url + "/v1/messages?beta=true", json=GOOD,
                                 headers=ANTHROPIC)
    assert head.status_code == 404
    assert beta.status_code == 200
    unrouted = [r for r in simulator.records if r.api == "unrouted"]
    assert [(r.method, r.path, r.status) for r in unrouted] == [("HEAD", "/", 404)]
    assert simulator.records[-1].path == "/v1/messages"
    assert simulator.records[-1].api == "anthropic-messages"


async def test_each_api_lists_only_its_own_models_and_pages_them(server: SimServer) -> None:
    claude_client = AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0)
    everything = [model.id async for model in claude_client.models.list(limit=2)]  # all pages
    first = await claude_client.models.list(limit=2)
    assert len(first.data) == 2 and first.has_more is True
    after = await claude_client.models.list(limit=2, after_id=first.data[-1].id)
    assert [m.id for m in after.data] == everything[2:4]
    assert {"claude-opus-4-8", "claude-haiku-4-5", "sim-small", "test-tiny"} <= set(everything)
    assert not [model for model in everything if model.startswith("gpt")]
    async with httpx2.AsyncClient() as client:
        gpt = (await client.get(server.base_url + "/v1/models", headers=OPENAI)).json()
        bad = await client.get(server.base_url + "/v1/models?limit=0", headers=ANTHROPIC)
        cross = await client.get(server.base_url + "/v1/models/gpt-5.5", headers=ANTHROPIC)
    ids = {model["id"] for model in gpt["data"]}
    assert {"gpt-5.5", "sim-large"} <= ids
    assert not [model for model in ids if model.startswith("claude")]
    assert bad.status_code == 400
    assert cross.status_code == 404
    await claude_client.close()


async def test_the_models_endpoint_answers_in_each_apis_format(server: SimServer) -> None:
    async with httpx2.AsyncClient() as client:
        claude = (await client.get(server.base_url + "/v1/models", headers=ANTHROPIC)).json()
        gpt = (await client.get(server.base_url + "/v1/models", headers=OPENAI)).json()
    assert claude["has_more"] is False
    assert claude["first_id"] == claude["data"][0]["id"]
    assert {"type", "id", "display_name", "created_at"} <= set(claude["data"][0])
    assert gpt["object"] == "list"
    assert {"id", "object", "created", "owned_by"} <= set(gpt["data"][0])


async def test_the_jsonl_log_holds_every_request_without_keys(tmp_path: Path,
                                                              clock: FakeClock) -> None:
    log = tmp_path / "logs" / "sim.jsonl"
    simulator = Simulator(clock=clock, log_path=log, faults="500@2")
    async with SimServer(simulator) as server:
        client = AsyncAnthropic(base_url=server.base_url, api_key="sk-ant-secret-key-123",
                                max_retries=0)
        await client.messages.create(**GOOD)
        with pytest.raises(Exception, match="500"):
            await client.messages.create(**GOOD)
        await client.messages.count_tokens(model="sim-small", messages=GOOD["messages"])
        await client.close()
    simulator.close()
    text = log.read_text()
    assert "sk-ant-secret" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines == [record.to_json() for record in simulator.records]
    first, failed, counted = lines
    assert first["request"] == GOOD
    assert first["status"] == 200
    assert first["index"] == 1
    assert first["stopReason"] == "end_turn"
    assert first["usage"]["input_tokens"] == first["tokens"]["input"]
    assert first["tokens"]["output"] > 0
    assert first["time"] == clock.now
    assert failed["status"] == 500
    assert failed["fault"] == "500"
    assert failed["index"] == 2
    assert counted["api"] == "anthropic-count-tokens"
    assert counted["usage"]["input_tokens"] == first["tokens"]["prompt"]


async def test_records_and_reset_over_http(server: SimServer, simulator: Simulator) -> None:
    async with httpx2.AsyncClient() as client:
        await client.post(server.base_url + "/v1/messages", json=GOOD, headers=ANTHROPIC)
        records = (await client.get(server.base_url + "/_sim/records")).json()["records"]
        reset = await client.post(server.base_url + "/_sim/reset")
    assert len(records) == 1
    assert records[0]["path"] == "/v1/messages"
    assert reset.json() == {"ok": True}


def test_the_threaded_server_serves_synchronous_callers() -> None:
    simulator = Simulator()
    handle = SimServer(simulator).run_in_thread()
    try:
        client = Anthropic(base_url=handle.base_url, api_key="k", max_retries=0)
        message = client.messages.create(**GOOD)
        assert message.stop_reason == "end_turn"
        client.close()
    finally:
        handle.stop()
    assert len(simulator.records) == 1
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(handle.base_url + "/v1/models", headers=ANTHROPIC)


def test_the_command_line_runs_the_server(tmp_path: Path) -> None:
    log = tmp_path / "cli.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_server", "sim", "--port", "0", "--log", str(log),
         "--faults", "slow@9:0.1"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stderr is not None
        base_url = None
        for _ in range(20):
            line = process.stderr.readline()
            found = re.search(r"listening on (http://\S+)", line)
            if found:
                base_url = found.group(1)
                break
        assert base_url is not None
        response = httpx2.post(base_url + "/v1/messages", json=GOOD, headers=ANTHROPIC,
                               timeout=30)
        assert response.status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()
    assert json.loads(log.read_text().splitlines()[0])["status"] == 200


def test_the_command_line_explains_a_bad_fault_spec() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "agent_server", "sim", "--port", "0", "--faults", "boom@1"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "unknown fault 'boom'" in result.stderr


async def test_plain_answers_validate_strictly_against_the_sdk_models(server: SimServer) -> None:
    prompt = [{"role": "user", "content": "Read the readme please."}]
    async with httpx2.AsyncClient(base_url=server.base_url) as client:
        message = await client.post("/v1/messages", headers=ANTHROPIC, json={
            "model": "sim-small", "max_tokens": 2000, "messages": prompt,
            "thinking": {"type": "enabled", "budget_tokens": 1024}})
        counted = await client.post("/v1/messages/count_tokens", headers=ANTHROPIC,
                                    json={"model": "sim-small", "messages": prompt})
        model = await client.get("/v1/models/sim-small", headers=ANTHROPIC)
        chat = await client.post("/v1/chat/completions", headers=OPENAI, json={
            "model": "test-thinker", "messages": prompt, "tools": [
                {"type": "function", "function": {"name": "ls", "parameters": {}}}]})
        response = await client.post("/v1/responses", headers=OPENAI, json={
            "model": "test-thinker", "input": "Think, then answer.",
            "reasoning": {"summary": "auto"}})
    Message.model_validate(message.json())
    MessageTokensCount.model_validate(counted.json())
    AnthropicModel.model_validate(model.json())
    ChatCompletion.model_validate(chat.json())
    Response.model_validate(response.json())
