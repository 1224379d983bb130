"""Scenarios: loading and validation, progression by tool ids, the fallback, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agent_server.context.summary_prompt import summary_message_text
from agent_server.sim.scenario import (
    ScenarioError,
    default_scenario,
    load_scenario,
    parse_scenario,
)
from agent_server.sim.simulator import Simulator
from tests.sim.builders import anthropic_tools, chat_tools, responses_tools

GOOD: dict[str, Any] = {
    "name": "two",
    "turns": [
        {"user": "List it", "steps": [
            {"tools": [{"name": "ls", "arguments": {"path": "."}}]},
            {"text": "Done.", "textTokens": 10},
        ]},
    ],
}


def test_scenarios_load_from_json_and_yaml(tmp_path: Path) -> None:
    as_json = tmp_path / "s.json"
    as_json.write_text(json.dumps(GOOD))
    as_yaml = tmp_path / "s.yaml"
    as_yaml.write_text("turns:\n  - user: List it\n    steps:\n"
                       "      - tools: [{name: ls, arguments: {path: .}}]\n"
                       "      - {text: Done., textTokens: 10}\n")
    from_json, from_yaml = load_scenario(as_json), load_scenario(as_yaml)
    assert from_json.turns == from_yaml.turns
    assert from_json.turns[0].steps[1].text_tokens == 10
    assert from_json.find_turn("  List\n it ") == 0
    assert from_json.prompts == ("List it",)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"turns": []}, "expected a non-empty list of turns"),
        ({"turns": [{"user": "", "steps": [{"text": "x"}]}]}, r"turns\[0\]\.user"),
        ({"turns": [{"user": "a", "steps": [{"text": "x"}, {"text": "y"}]}]},
         r"turns\[0\]\.steps\[0\]: only the last step may end without tool calls"),
        ({"turns": [{"user": "a", "steps": [{"tools": [{"name": "ls"}]}]}]},
         r"turns\[0\]\.steps\[0\]: the last step must not call tools"),
        ({"turns": [{"user": "a", "steps": [{"text": "x", "textTokens": -1}]}]},
         r"turns\[0\]\.steps\[0\]\.textTokens"),
        ({"turns": [{"user": "a", "steps": [{"thinking": "only"}]}]},
         "a step needs text, textTokens or tools"),
        ({"turns": [{"user": "a", "steps": [{"text": "x", "tool": []}]}]}, "unknown keys"),
        ({"turns": [{"user": "a", "steps": [{"tools": [{"arguments": {}}]}, {"text": "x"}]}]},
         r"tools\[0\]\.name"),
        ({"turns": [{"user": "a", "steps": [{"text": "x"}]},
                    {"user": " a ", "steps": [{"text": "y"}]}]}, "repeats"),
    ],
)
def test_bad_scenarios_are_refused_with_the_field_named(data: Any, problem: str) -> None:
    with pytest.raises(ScenarioError, match=problem):
        parse_scenario(data, "bad.yaml")


def test_a_missing_or_broken_file_is_explained(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ScenarioError, match="not valid JSON"):
        load_scenario(broken)


def test_the_default_scenario_uses_the_agents_tools() -> None:
    scenario = default_scenario()
    shapes = {
        "read": {"path", "offset", "limit"},
        "write": {"path", "content"},
        "edit": {"path", "oldText", "newText"},
        "ls": {"path"},
        "find": {"pattern", "path"},
        "grep": {"pattern", "path", "glob"},
        "bash": {"command", "timeout"},
    }
    calls = [tool for turn in scenario.turns for step in turn.steps for tool in step.tools]
    assert 12 <= len(scenario.turns) <= 20
    assert sum(len(turn.steps) for turn in scenario.turns) >= 60
    assert {tool.name for tool in calls} == set(shapes)
    for tool in calls:
        assert set(tool.arguments) <= shapes[tool.name], tool


async def test_the_progression_follows_tool_ids_on_chat_and_responses(
    openai_client: AsyncOpenAI,
) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read the readme please."}]
    first = await openai_client.chat.completions.create(
        model="sim-small", messages=messages, tools=chat_tools()
    )
    call = (first.choices[0].message.tool_calls or [])[0]
    # A result for a call the scenario made at turn 0, step 0 -> step 1, whatever came before.
    replay = [
        {"role": "user", "content": "Something else entirely."},
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "README.md"},
    ]
    second = await openai_client.chat.completions.create(
        model="sim-small", messages=replay, tools=chat_tools()
    )
    paths = [json.loads(c.function.arguments)["path"]
             for c in second.choices[0].message.tool_calls or []]
    assert paths == ["README.md", "setup.py"]

    items: list[Any] = [
        {"role": "user", "content": "Read the readme please."},
        {"type": "function_call", "call_id": "call_sim_0_1_0_x", "name": "read",
         "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_sim_0_1_0_x", "output": "hi"},
    ]
    final = await openai_client.responses.create(model="sim-small", input=items,
                                                 tools=responses_tools())
    assert final.output_text == "The readme says hello."


async def test_a_prompt_after_a_compaction_summary_still_matches_its_turn(
    anthropic_client: AsyncAnthropic,
) -> None:
    message = await anthropic_client.messages.create(
        model="sim-small",
        max_tokens=100,
        messages=[{"role": "user", "content": [
            {"type": "text", "text": summary_message_text("## Goal\nSomething earlier.")},
            {"type": "text", "text": "Read   the readme\nplease."},
        ]}],
        tools=anthropic_tools(),  # type: ignore[arg-type]
    )
    assert message.content[1].type == "tool_use"
    assert message.content[1].id.startswith("toolu_sim_0_0_0_")


async def test_answers_are_deterministic_so_retries_are_safe(
    simulator: Simulator, anthropic_client: AsyncAnthropic,
) -> None:
    request: dict[str, Any] = {
        "model": "sim-small",
        "max_tokens": 500,
        "tools": anthropic_tools(),
        "messages": [{"role": "user", "content": "Read the readme please."}],
    }
    first = await anthropic_client.messages.create(**request)
    again = await anthropic_client.messages.create(**request)
    assert [b.model_dump() for b in first.content] == [b.model_dump() for b in again.content]


async def test_fallback_explores_with_ls_then_read_then_answers(
    anthropic_client: AsyncAnthropic,
) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hello there"}]
    outputs = {"ls": "README.md\nsrc/\nsetup.py\n", "read": "# Sample project\nMore text."}
    calls = []
    for _ in range(3):
        message = await anthropic_client.messages.create(
            model="sim-small", max_tokens=500, messages=messages,
            tools=anthropic_tools(("ls", "read", "bash")),
        )
        uses = [b for b in message.content if b.type == "tool_use"]
        calls += [(b.name, b.input) for b in uses]
        messages.append({"role": "assistant",
                         "content": [b.model_dump(exclude_none=True) for b in message.content]})
        if uses:
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b.id, "content": outputs[b.name]}
                for b in uses
            ]})
    assert calls == [("ls", {"path": "."}), ("read", {"path": "README.md"})]
    assert all(b["id"].startswith("toolu_sim_f_") for m in messages
               if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use")
    answer = message.content[0].text
    assert message.stop_reason == "end_turn"
    assert "README.md" in answer
    assert "# Sample project" in answer
    assert "hello there" in answer


async def test_fallback_without_tools_answers_in_text(openai_client: AsyncOpenAI) -> None:
    completion = await openai_client.chat.completions.create(
        model="sim-small", messages=[{"role": "user", "content": "What is 2 + 2?"}]
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert "What is 2 + 2?" in (choice.message.content or "")


async def test_results_for_unknown_calls_get_a_text_answer(
    anthropic_client: AsyncAnthropic,
) -> None:
    message = await anthropic_client.messages.create(
        model="sim-small", max_tokens=300, tools=anthropic_tools(),
        messages=[
            {"role": "user", "content": "Do it."},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_01Real", "name": "ls", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01Real", "content": "a.txt"}]},
        ],
    )
    assert message.stop_reason == "end_turn"
    assert [b.type for b in message.content] == ["text"]
