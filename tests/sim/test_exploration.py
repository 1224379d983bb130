"""Exploring: a step that lists or searches is skipped when the request already shows what it
looks for, and a declared repository map is asked for first; the same rule for every client,
on plain objects and over HTTP through the official SDKs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agent_server.sim.exploration import focus, shown
from agent_server.sim.responder import parse_call_id, plan_reply
from agent_server.sim.scenario import Location, ScenarioError, parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.transcript import (
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    TranscriptMessage,
)

PARSE = Location("src/codec.py", "def parse_header(raw):", 40)
SCENARIO: dict[str, Any] = {
    "name": "exploring",
    "turns": [
        {"user": "Where is parse_header()? Read it.", "steps": [
            {"tools": [{"name": "grep", "arguments": {"pattern": "def parse_header",
                                                      "path": "src"}}],
             "finds": [{"path": "src/codec.py", "text": "def parse_header(raw):", "line": 40}]},
            {"tools": [{"name": "read", "arguments": {"path": "src/codec.py", "offset": 40,
                                                      "limit": 20}}]},
            {"text": "It checks the magic first."},
        ]},
    ],
}
PROMPT = SCENARIO["turns"][0]["user"]
BASIC = (ToolSpec("grep", {"type": "object", "properties": {"pattern": {}, "path": {}}}),
         ToolSpec("read", {"type": "object", "properties": {"path": {}, "offset": {},
                                                            "limit": {}}}))
MAP = ToolSpec("repo_map", {"type": "object", "properties": {"focus": {}, "tokens": {}}})
MAP_SHOWING = "\nsrc/codec.py:\n...⋮...\n 40│def parse_header(raw):\n...⋮...\n"
MAP_NOT_SHOWING = "\nsrc/other.py:\n...⋮...\n 12│def unrelated():\n...⋮...\n"


def user(*parts: Any) -> TranscriptMessage:
    return TranscriptMessage("user", tuple(
        TextPart(p) if isinstance(p, str) else p for p in parts))


def assistant(*parts: Any) -> TranscriptMessage:
    return TranscriptMessage("assistant", tuple(
        TextPart(p) if isinstance(p, str) else p for p in parts))


def result_of(call: ToolCallPart, text: str) -> tuple[TranscriptMessage, ...]:
    return assistant(call), user(ToolResultPart(call.id, text))


def request(*messages: TranscriptMessage, tools: tuple[ToolSpec, ...] = BASIC) -> Transcript:
    return Transcript("", tools, messages)


# --- what a request shows -------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "src/codec.py:40:def parse_header(raw):",  # grep with the path on each line
    "src/codec.py\n40:def parse_header(raw):",  # grouped under a heading
    MAP_SHOWING,  # a map: the file's heading, then numbered lines
])
def test_a_line_is_shown_with_its_path_and_number(text: str) -> None:
    call = ToolCallPart("c1", "grep", {"pattern": "x"})
    assert shown(request(user("hi"), *result_of(call, text)), PARSE)


def test_a_read_shows_the_lines_of_the_file_it_names() -> None:
    read = ToolCallPart("c1", "read", {"path": "src/codec.py", "offset": 38})
    assert shown(request(user("hi"), *result_of(read, "38\tMAGIC = b'x'\n39\n40\tdef "
                                                     "parse_header(raw):")), PARSE)


@pytest.mark.parametrize("text", [
    "src/codec.py:\n│def parse_header(raw):",  # no number, and the step needs it
    "src/codec.py:41:def parse_header(raw):",  # another number
    "src/codec.py:\n│x = 1\nsrc/other.py:\n 40│def parse_header(raw):",  # another file's
    "src/codec.py is where it is",  # the path alone
])
def test_what_does_not_show_the_line(text: str) -> None:
    call = ToolCallPart("c1", "grep", {"pattern": "x"})
    assert not shown(request(user("hi"), *result_of(call, text)), PARSE)


def test_a_file_is_shown_by_its_path_anywhere() -> None:
    assert shown(request(user("look at src/codec.py")), Location("src/codec.py"))
    assert not shown(request(user("look at codec.py")), Location("src/codec.py"))


def test_the_focus_is_what_the_prompt_writes_as_code_and_the_search_patterns() -> None:
    step = parse_scenario(SCENARIO).turns[0].steps[0]
    assert focus(request(user(PROMPT)), step) == ["parse_header", "def"]


def test_bad_finds_are_refused() -> None:
    for finds, message in (([{"text": "x"}], "path"), ([{"path": "a", "line": 3}], "line"),
                           ("a", "list")):
        data = json.loads(json.dumps(SCENARIO))
        data["turns"][0]["steps"][0]["finds"] = finds
        with pytest.raises(ScenarioError, match=message):
            parse_scenario(data)
    data = json.loads(json.dumps(SCENARIO))
    data["turns"][0]["steps"][-1]["finds"] = [{"path": "a"}]
    with pytest.raises(ScenarioError, match="finds"):
        parse_scenario(data)


# --- what the model does ----------------------------------------------------------------------


def plan(transcript: Transcript) -> Any:
    return plan_reply(transcript, parse_scenario(SCENARIO), id_prefix="toolu")


def test_without_a_map_the_step_is_taken() -> None:
    reply = plan(request(user(PROMPT)))
    assert reply.source == "scenario:0:0"
    assert [c.name for c in reply.calls] == ["grep"]


def test_with_a_map_tool_it_is_asked_for_first_then_the_step_skipped_or_taken() -> None:
    first = plan(request(user(PROMPT), tools=(*BASIC, MAP)))
    assert first.source == "explore:0:0"
    (call,) = first.calls
    assert call.name == "repo_map"
    assert call.arguments == {"focus": ["parse_header", "def"]}
    ref = parse_call_id(call.id)
    assert ref is not None and ref.explore and ref.step == 0
    made = ToolCallPart(call.id, call.name, call.arguments)
    # The map shows the definition with its line: the search is skipped, the read comes.
    after = plan(request(user(PROMPT), *result_of(made, MAP_SHOWING), tools=(*BASIC, MAP)))
    assert after.source == "scenario:0:1"
    assert after.skipped == ("0:0",)
    assert [c.name for c in after.calls] == ["read"]
    # It does not: the search is made as written, and the map is not asked for again.
    taken = plan(request(user(PROMPT), *result_of(made, MAP_NOT_SHOWING), tools=(*BASIC, MAP)))
    assert taken.source == "scenario:0:0"
    assert [c.name for c in taken.calls] == ["grep"]


def test_what_the_request_already_shows_is_not_looked_for_again() -> None:
    reply = plan(request(user("src/codec.py:40:def parse_header(raw):"),
                         assistant("noted"), user(PROMPT)))
    assert reply.source == "scenario:0:1"
    assert reply.skipped == ("0:0",)


# --- over HTTP ------------------------------------------------------------------------------


@pytest.fixture
async def exploring() -> AsyncIterator[tuple[Simulator, AsyncAnthropic, AsyncOpenAI]]:
    simulator = Simulator(scenario=parse_scenario(SCENARIO))
    async with SimServer(simulator) as server:
        anthropic = AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0)
        openai = AsyncOpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        yield simulator, anthropic, openai
        await anthropic.close()
        await openai.close()


def anthropic_tools(with_map: bool) -> list[dict[str, Any]]:
    tools = [{"name": spec.name, "description": spec.name, "input_schema": spec.schema}
             for spec in BASIC]
    if with_map:
        tools.append({"name": "repo_map", "description": "A map of the repository.",
                      "input_schema": MAP.schema})
    return tools


async def test_over_http_a_map_spares_the_search_and_the_record_says_so(
    exploring: tuple[Simulator, AsyncAnthropic, AsyncOpenAI],
) -> None:
    simulator, anthropic, _ = exploring
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    first = await anthropic.messages.create(
        model="sim-large", max_tokens=1000, tools=anthropic_tools(True),  # type: ignore[arg-type]
        messages=messages)  # type: ignore[arg-type]
    (call,) = [b for b in first.content if b.type == "tool_use"]
    assert call.name == "repo_map"
    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                      "content": MAP_SHOWING}]},
    ]
    second = await anthropic.messages.create(
        model="sim-large", max_tokens=1000, tools=anthropic_tools(True),  # type: ignore[arg-type]
        messages=messages)  # type: ignore[arg-type]
    assert [b.name for b in second.content if b.type == "tool_use"] == ["read"]
    plain = await anthropic.messages.create(
        model="sim-large", max_tokens=1000, tools=anthropic_tools(False),  # type: ignore[arg-type]
        messages=[{"role": "user", "content": PROMPT}])
    assert [b.name for b in plain.content if b.type == "tool_use"] == ["grep"]
    records = [r.to_json() for r in simulator.records]
    assert [(r["source"], r["skipped"]) for r in records] == [
        ("explore:0:0", []), ("scenario:0:1", ["0:0"]), ("scenario:0:0", [])]


async def test_over_the_responses_api_a_client_without_a_map_tool_searches(
    exploring: tuple[Simulator, AsyncAnthropic, AsyncOpenAI],
) -> None:
    simulator, _, openai = exploring
    shell = [{"type": "function", "name": "exec_command", "description": "Run a command.",
              "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
                             "required": ["cmd"]}, "strict": False}]
    response = await openai.responses.create(
        model="sim-large", tools=shell, input=PROMPT)  # type: ignore[arg-type]
    (call,) = [item for item in response.output if item.type == "function_call"]
    assert "grep -rnE" in call.arguments
    assert simulator.records[-1].source == "scenario:0:0"
